package replayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/workload"
)

// GeneratedName is the trace column of a workload of generated sessions.
const GeneratedName = "generated"

// A Workload is what a replay sends: the requests of a trace, or of
// synthetic multi-turn sessions, in timestamp order.
type Workload struct {
	Name        string              // the trace file's base name, or GeneratedName
	Requests    []*workload.Request // in timestamp order
	BlockTokens int                 // tokens per hash id
	Read        workload.ReadStats
	// Generated holds the generator's options of a synthetic workload;
	// nil for a trace file.
	Generated *workload.GenOptions
}

// LoadTrace reads the first max requests (0: all) of a trace file in
// timestamp order.
func LoadTrace(ctx context.Context, path string, o workload.Options, max int) (*Workload, error) {
	r, err := workload.Open(path, o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	w, err := readAll(ctx, r, max)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	w.Name = filepath.Base(path)
	return w, nil
}

// Generate returns the first max requests (0: all) of synthetic sessions
// as kvtier trace --generate writes them: each turn sends the session's
// system prompt, every earlier turn and answer, and new tokens. The
// generator writes into a pipe read as it goes and stops once enough is
// read, so only the workload is held, never the trace's text.
func Generate(ctx context.Context, o workload.GenOptions, max int) (*Workload, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := workload.Generate(pw, o)
		pw.CloseWithError(err) // nil: the reader sees io.EOF
	}()
	defer pr.Close() // a generator still writing fails at its next write
	r, err := workload.NewReader(pr, GeneratedName, workload.Options{BlockTokens: o.BlockTokens})
	if err != nil {
		return nil, err
	}
	w, err := readAll(ctx, r, max)
	if err != nil {
		return nil, err
	}
	w.Name, w.Generated = GeneratedName, &o
	return w, nil
}

// MaxWorkloadBytes bounds the memory of the requests a workload holds
// (about 8 bytes per block id and 200 per request): a replay keeps its
// whole workload, unlike kvtier trace, which streams.
const MaxWorkloadBytes = 8 << 30

// workloadBytes is MaxWorkloadBytes; tests lower it.
var workloadBytes int64 = MaxWorkloadBytes

// ErrTooLarge is the error of a workload past MaxWorkloadBytes.
var ErrTooLarge = errors.New("workload too large to hold")

func readAll(ctx context.Context, r *workload.Reader, max int) (*Workload, error) {
	w := &Workload{}
	var held int64
	for max <= 0 || len(w.Requests) < max {
		if len(w.Requests)%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		req, err := r.NextContext(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if held += requestBytes(req); held > workloadBytes {
			return nil, fmt.Errorf("%w: the first %d requests hold more than %s (block ids and records): replay fewer",
				ErrTooLarge, len(w.Requests)+1, units.FormatBytes(workloadBytes))
		}
		w.Requests = append(w.Requests, req)
	}
	w.Read = r.Stats()
	w.BlockTokens = w.Read.BlockTokens
	if len(w.Requests) == 0 {
		return nil, fmt.Errorf("%w (%d lines; %s)", workload.ErrNoRequests, w.Read.Lines, w.Read.BadLines())
	}
	return w, nil
}

// Sessions returns the requests grouped by session: sessions in the
// order of their first request, turns in timestamp order.
func (w *Workload) Sessions() [][]*workload.Request {
	index := map[int]int{}
	var out [][]*workload.Request
	for _, r := range w.Requests {
		i, ok := index[r.Session]
		if !ok {
			i = len(out)
			index[r.Session] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

// Order returns the requests in the order dispatch d is expected to send
// them: timestamp order, or for closed-loop sessions, concurrency of
// them at a time (0: all) taking turns, one turn each per round, a
// finished session's slot going to the next session: the order when
// every turn takes as long as every other.
func (w *Workload) Order(d Dispatch, concurrency int) []*workload.Request {
	if d != DispatchSession {
		return slices.Clone(w.Requests)
	}
	sess := w.Sessions()
	n := concurrency
	if n <= 0 || n > len(sess) {
		n = len(sess)
	}
	slots := slices.Clone(sess[:n])
	next := n
	out := make([]*workload.Request, 0, len(w.Requests))
	for len(out) < len(w.Requests) {
		for i, s := range slots {
			if len(s) == 0 {
				continue
			}
			out = append(out, s[0])
			slots[i] = s[1:]
			if len(slots[i]) == 0 && next < len(sess) {
				slots[i] = sess[next]
				next++
			}
		}
	}
	return out
}

// Model returns the LRU model's single-cache curve of the requests in
// the order given (touched tail first, as vLLM frees a request's blocks),
// with bytesPerToken (0: unknown, 1 is used) for its byte figures.
func Model(reqs []*workload.Request, blockTokens int, bytesPerToken int64) (*workload.Curve, error) {
	a, err := workload.NewAnalyzer(workload.AnalyzeOptions{BytesPerToken: max(bytesPerToken, 1), Touch: workload.TouchReverse})
	if err != nil {
		return nil, err
	}
	for i, r := range reqs {
		c := *r
		c.Time = float64(i) // the order given is the order of arrival
		if err := a.Add(&c); err != nil {
			return nil, err
		}
	}
	return a.Finish(blockTokens).Curves[0], nil
}

// WorkingSet returns the workload's working set in tokens: the smallest
// cache at which the LRU model, fed the requests in the order d is
// expected to send them (Order), serves every hit an infinite cache
// would; 0 when the workload has no reuse.
func (w *Workload) WorkingSet(d Dispatch, concurrency int) (int64, error) {
	c, err := Model(w.Order(d, concurrency), w.BlockTokens, 1)
	if err != nil {
		return 0, err
	}
	k, ok := c.Knee(1)
	if !ok {
		return 0, nil
	}
	return k * int64(w.BlockTokens), nil
}

// DefaultSessions are the synthetic sessions replay and knee send when
// given no trace: the closed-loop multi-turn load of the reference's
// capacity knee (docs/reference.md). Four sessions of exactly six turns
// share a 576-token system prompt; each turn adds 760 new tokens and a
// 740-token answer, so prompts end at 8,836 tokens (0.87 GB of
// Qwen3-Coder-30B-A3B KV, 0.94 GB with the last answer: the reference's
// 4 × 0.91 GB) and the working set (the shared prompt once, the last
// answers never read again), 3.16 GB, fits the reference's 3.6 GB pool
// and not its 2.4 GB one.
//
// The reference gives the sessions' number and size, not how a turn
// splits between new and output tokens nor whether the sessions share a
// prefix: those are calibrated, with the simulator counting lookups as
// vLLM 0.18.1 did (vllmsim.Profile.CountEveryAttempt), against its knee
// table (harness/knee tests). At 1.2 GB the pool holds one session's
// context, so the turns are served one after the other (a waiting prompt
// whose chunk does not fit is not admitted) and a turn's TTFT is the
// three other sessions' turns: the reference's 13 s takes about 700
// output tokens a turn. The waiting turn is looked up, and counted, at
// every step, and its own context has been evicted by then: the
// realized APC there is what every waiting turn finds cached, the shared
// prompt, and the reference's 7.4 % takes about 600 shared tokens (own
// system prompts gave 0.8 %). The session's size then leaves about 760
// new tokens a turn.
func DefaultSessions() workload.GenOptions {
	return workload.GenOptions{
		Sessions: 4, Turns: 6, SystemPrompts: 1, SystemTokens: 576, TurnTokens: 760, OutputTokens: 740,
		BlockTokens: 16, Seed: 1, Fixed: true,
	}
}

// requestBytes is about the memory r holds.
func requestBytes(r *workload.Request) int64 {
	return int64(8*len(r.Hashes)+len(r.ID)+len(r.Type)) + 200
}
