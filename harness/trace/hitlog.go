package trace

import (
	"math"
	"sync"

	"github.com/kvtier/kvtier/workload"
)

// farDist is the largest stack distance a hitLog keeps as it is: a
// farther one is kept as farDist, which every capacity below it
// treats alike (beyond the capacity, and a hit for an unbounded tier).
const farDist = math.MaxUint32 - 1

// chunkLen is the length of a chunk of a chunked slice: large enough
// that its headers cost nothing, small enough that growing never copies
// more than one.
const chunkLen = 1 << 20

// A chunked is an append-only slice kept in fixed chunks, so that a log
// of tens of millions of values never holds two copies while it grows.
type chunked[T any] struct {
	c [][]T
	n int
}

func (s *chunked[T]) add(v T) {
	if s.n%chunkLen == 0 {
		s.c = append(s.c, make([]T, 0, chunkLen))
	}
	last := &s.c[len(s.c)-1]
	*last = append(*last, v)
	s.n++
}

func (s *chunked[T]) at(i int) T { return s.c[i/chunkLen][i%chunkLen] }

// A hitLog keeps what a planner needs of every request of one reading
// of a trace, its time and its blocks' stack distances and tokens, so
// that configurations chosen after the reading (the answer's, the
// check's) are planned without reading the trace again. It holds 6
// bytes per block reference (8 when a block holds more than 65,535
// tokens) and 20 per request.
type hitLog struct {
	times  chunked[float64]
	inputs chunked[int32]
	ends   chunked[int]    // per request: its blocks end here in dist and tokens
	dist   chunked[uint32] // math.MaxUint32: never seen (workload.Inf)
	tokens chunked[uint16]
	wide   chunked[int32] // the tokens instead, once one is past 65,535
}

// add records request r with its hits h.
func (l *hitLog) add(r *workload.Request, h *workload.Hits) {
	l.times.add(r.Time)
	l.inputs.add(int32(min(h.Input, math.MaxInt32)))
	for k, d := range h.Dist {
		switch {
		case d == workload.Inf:
			l.dist.add(math.MaxUint32)
		case d > farDist:
			l.dist.add(farDist)
		default:
			l.dist.add(uint32(d))
		}
		l.addTokens(h.Tokens[k])
	}
	l.ends.add(l.dist.n)
}

// addTokens records one block's tokens, moving to the wide log at the
// first count that does not fit 16 bits.
func (l *hitLog) addTokens(t int) {
	if l.wide.n == 0 && t <= math.MaxUint16 {
		l.tokens.add(uint16(t))
		return
	}
	if l.wide.n == 0 {
		for i := range l.tokens.n {
			l.wide.add(int32(l.tokens.at(i)))
		}
		l.tokens = chunked[uint16]{}
	}
	l.wide.add(int32(min(t, math.MaxInt32)))
}

func (l *hitLog) tokensAt(i int) int {
	if l.wide.n > 0 {
		return int(l.wide.at(i))
	}
	return int(l.tokens.at(i))
}

// replay calls observe with every request recorded, in the order
// recorded, each with its hits as the analysis gave them (Lead is the
// running largest distance).
func (l *hitLog) replay(observe func(*workload.Request, *workload.Hits)) {
	l.replayFirst(l.ends.n, observe)
}

// replayFirst is replay of the first n requests recorded.
func (l *hitLog) replayFirst(n int, observe func(*workload.Request, *workload.Hits)) {
	var r workload.Request
	var h workload.Hits
	start := 0
	for i := range n {
		r.Time, r.Input = l.times.at(i), int(l.inputs.at(i))
		h.Input = r.Input
		h.Dist, h.Lead, h.Tokens = h.Dist[:0], h.Lead[:0], h.Tokens[:0]
		lead := int64(0)
		end := l.ends.at(i)
		for k := start; k < end; k++ {
			d := int64(l.dist.at(k))
			if d == math.MaxUint32 {
				d = workload.Inf
			}
			lead = max(lead, d)
			h.Dist, h.Lead = append(h.Dist, d), append(h.Lead, lead)
			h.Tokens = append(h.Tokens, l.tokensAt(k))
		}
		observe(&r, &h)
		start = end
	}
}

// planLog plans o's configurations over every request of log in up to
// shards Planners that read the log at the same time (it is only read),
// each over a contiguous share of the configurations (neighbours in the
// grid often split a request alike, which a Planner predicts once): on
// two cores the grid and the answer's configurations plan in about two
// thirds of the time. The rounding notes are the whole grid's, said once
// per flag.
func planLog(o PlanOptions, log *hitLog, shards int) (plan []PlanResult, rounding []string, err error) {
	whole, err := NewPlanner(o)
	if err != nil {
		return nil, nil, err
	}
	n := len(o.Configs)
	shards = max(1, min(shards, n))
	parts := make([]*Planner, shards)
	for i := range parts {
		lo, hi := i*n/shards, (i+1)*n/shards
		so := o
		so.Configs, so.Roles = o.Configs[lo:hi], o.Roles[min(lo, len(o.Roles)):min(hi, len(o.Roles))]
		if parts[i], err = NewPlanner(so); err != nil {
			return nil, nil, err
		}
	}
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Go(func() { log.replay(p.Observe) })
	}
	wg.Wait()
	for _, p := range parts {
		plan = append(plan, p.Results()...)
	}
	return plan, whole.Rounding(), nil
}
