package vllmsim

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// An Arrival is a request a Replay submits: its client sends it at At
// (modeled seconds) with a prompt of token ids.
type Arrival struct {
	At        float64
	Prompt    []int
	MaxTokens int
	Salt      string
}

// A Trace is what a replayed request got: the modeled time each of its
// tokens was generated, whether it finished, and how much of its prompt
// its first admission found cached.
type Trace struct {
	Tokens []float64
	Done   bool
	// Cached are the prompt tokens not computed (GPU prefix hits and
	// loads), Loaded those of them loaded from the CPU store or a peer.
	Cached, Loaded int
}

// A ReplayStop says whether a replay ends at modeled time now; done(i)
// reports whether arrival i has finished.
type ReplayStop func(now float64, done func(i int) bool) bool

// Until ends a replay at modeled time t.
func Until(t float64) ReplayStop {
	return func(now float64, _ func(int) bool) bool { return now >= t }
}

// Replay runs arrivals through the engine of cfg in modeled time, without
// sleeping and without HTTP: each request passes the front end, priced by
// the engine's load when it is sent as the server prices it, then joins
// the engine, which steps as the server's loop makes it step. Replay ends
// when every request is done or stop says so. It is the simulator on its
// virtual clock: a minute of modeled MB1 takes milliseconds.
func Replay(cfg Config, arrivals []Arrival, stop ReplayStop) ([]Trace, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	e := newEngine(engineConfigOf(cfg))
	v := &virtualRun{e: e}
	for i, a := range arrivals {
		if len(a.Prompt) == 0 || a.MaxTokens < 1 {
			return nil, fmt.Errorf("sim: replay: arrival %d: empty prompt or max_tokens < 1", i)
		}
		v.add(a.At, e.newRequest(fmt.Sprintf("replay-%d", i), a.Prompt, a.MaxTokens, a.Salt))
	}
	done := func(i int) bool {
		v.collect()
		return v.reqs[i].done
	}
	if err := v.run(func() bool { return stop(e.vt, done) }); err != nil {
		return nil, err
	}
	out := make([]Trace, len(v.reqs))
	for i, q := range v.reqs {
		out[i] = Trace{Tokens: q.tokens, Done: q.done, Cached: q.r.cached, Loaded: q.r.firstExt}
	}
	return out, nil
}

// A vreq is one request of a virtual run.
type vreq struct {
	sent   float64
	r      *request
	tokens []float64
	done   bool
}

// A virtualRun drives an engine in modeled time: sends enter the front
// end at their time, arrive after its cost, and the engine steps in
// between; idle time is skipped to the next event.
type virtualRun struct {
	e     *engine
	reqs  []*vreq // in the order added
	sends []*vreq // not sent yet, by time
	front []*vreq // in the front end, by arrival
}

func (v *virtualRun) add(at float64, r *request) *vreq {
	q := &vreq{sent: at, r: r}
	v.reqs = append(v.reqs, q)
	v.sends = append(v.sends, q)
	sort.SliceStable(v.sends, func(i, j int) bool { return v.sends[i].sent < v.sends[j].sent })
	return q
}

// admit moves sends whose time has come into the front end, and front-end
// requests whose cost has passed into the engine.
func (v *virtualRun) admit() {
	e := v.e
	for len(v.sends) > 0 && v.sends[0].sent <= e.vt {
		q := v.sends[0]
		v.sends = v.sends[1:]
		q.r.apiTime = e.cost.apiTime(q.r.promptLen, len(e.running)+len(e.waiting)+len(e.loading))
		q.r.arrival = q.sent + q.r.apiTime
		v.front = append(v.front, q)
		sort.SliceStable(v.front, func(i, j int) bool { return v.front[i].r.arrival < v.front[j].r.arrival })
	}
	for len(v.front) > 0 && v.front[0].r.arrival <= e.vt {
		q := v.front[0]
		v.front = v.front[1:]
		e.submit(q.r, e.vt)
	}
}

// collect takes the requests' new events; it reports whether all are done.
func (v *virtualRun) collect() bool {
	all := true
	for _, q := range v.reqs {
		for _, ev := range q.r.out.take() {
			q.tokens = append(q.tokens, ev.at)
			q.done = q.done || ev.finish != ""
		}
		all = all && q.done
	}
	return all
}

// next is the modeled time of the next event when the engine is idle.
func (v *virtualRun) next() float64 {
	t := math.Inf(1)
	if len(v.sends) > 0 {
		t = v.sends[0].sent
	}
	if len(v.front) > 0 {
		t = min(t, v.front[0].r.arrival)
	}
	if l, ok := v.e.nextLoad(); ok {
		t = min(t, l)
	}
	return t
}

// errRunaway stops a virtual run that would never end.
var errRunaway = errors.New("sim: virtual run: no end in sight after 10 million steps")

// run steps until every request is done, nothing is left to do, or stop
// says so.
func (v *virtualRun) run(stop func() bool) error {
	e := v.e
	for range int(1e7) {
		v.admit()
		p := e.schedule()
		if len(p.items) == 0 {
			t := v.next()
			if math.IsInf(t, 1) {
				v.collect()
				return nil
			}
			e.vt = max(e.vt, t)
			if stop != nil && stop() {
				v.collect()
				return nil
			}
			continue
		}
		e.vt += p.dur
		e.finish(p, e.vt)
		if v.collect() || (stop != nil && stop()) {
			return nil
		}
	}
	return errRunaway
}
