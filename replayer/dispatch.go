package replayer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/internal/wait"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/workload"
)

// Run sends the workload and writes one row per request to sink as each
// completes, extra (when not nil) adding columns to it; it reads the
// server's counters before and after and returns the run's summary. It
// returns early when ctx is cancelled (with ctx's error; a request cut
// short gets no row) or a row cannot be written (with that error),
// keeping what it wrote.
func (rp *Replayer) Run(ctx context.Context, sink results.Sink, extra func(*results.Row)) (*Summary, error) {
	before, berr := rp.c.Metrics(ctx, rp.info.Model)
	if rp.cfg.ServerLog != nil {
		rp.cfg.ServerLog.Mark() // the warm-up's line is no request's
	}
	col := &collector{}
	pr, sent := harness.ProgressOf(rp.cfg.Log), 0
	g := newRunGroup(ctx, func(row results.Row) error {
		if extra != nil {
			extra(&row)
		}
		col.add(row)
		rp.logRow(row)
		sent++
		pr.Step("request", min(sent, len(rp.w.Requests)-1), len(rp.w.Requests))
		return sink.Write(row)
	})
	start := harness.StartStopwatch()
	if rp.cfg.Dispatch == DispatchSession {
		rp.sessions(g, start)
	} else {
		rp.timestamps(g, start)
	}
	err := g.wait()
	sum := rp.summarize(col, start.Elapsed())
	if ctx.Err() == nil {
		after, aerr := rp.c.Metrics(ctx, rp.info.Model)
		sum.setAPC(before, berr, after, aerr)
	}
	return sum, err
}

// timestamps sends each request at its trace time over the speedup,
// at most Concurrency in flight.
func (rp *Replayer) timestamps(g *runGroup, start harness.Stopwatch) {
	reqs := rp.w.Requests
	var slots chan struct{}
	if rp.cfg.Concurrency > 0 {
		slots = make(chan struct{}, rp.cfg.Concurrency)
	}
	for _, r := range reqs {
		due := rp.scaled(r.Time - reqs[0].Time)
		if rp.over(due) || wait.Until(g.ctx, start.At(due)) != nil {
			return
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-g.ctx.Done():
				return
			}
		}
		if rp.over(start.Elapsed()) {
			return
		}
		g.start(func(ctx context.Context) {
			if slots != nil {
				defer func() { <-slots }()
			}
			if row, ok := rp.send(ctx, r, start, due); ok {
				g.emit(row)
			}
		})
	}
}

// sessions runs the sessions closed loop, Concurrency of them at once
// (0: all), each taking the next session when its own is done.
func (rp *Replayer) sessions(g *runGroup, start harness.Stopwatch) {
	sess := rp.w.Sessions()
	n := rp.cfg.Concurrency
	if n <= 0 || n > len(sess) {
		n = len(sess)
	}
	var next atomic.Int64
	for range n {
		g.start(func(ctx context.Context) {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(sess) || !rp.session(ctx, g, sess[i], start) {
					return
				}
			}
		})
	}
}

// session sends a session's turns one after the other, each after the
// previous one's answer and its think time. It reports false when the
// run is over (cancelled, a failed write, past Duration).
func (rp *Replayer) session(ctx context.Context, g *runGroup, turns []*workload.Request, start harness.Stopwatch) bool {
	for j, r := range turns {
		if j > 0 && wait.For(ctx, rp.think(r)) != nil {
			return false
		}
		due := start.Elapsed()
		if rp.over(due) {
			return false
		}
		row, ok := rp.send(ctx, r, start, due)
		if !ok || g.emit(row) != nil {
			return false
		}
	}
	return true
}

// think is the think time before turn r: the trace's gap to its parent
// over the speedup, else Config.Think.
func (rp *Replayer) think(r *workload.Request) time.Duration {
	if r.HasParent() && !math.IsNaN(r.Think) && r.Think >= 0 {
		return rp.scaled(r.Think)
	}
	return rp.cfg.Think
}

// scaled converts trace seconds to a wall-clock duration over the speedup.
func (rp *Replayer) scaled(sec float64) time.Duration {
	return time.Duration(sec / rp.cfg.Speedup * float64(time.Second))
}

// over reports whether a request due at t after the start is past Duration.
func (rp *Replayer) over(t time.Duration) bool {
	return rp.cfg.Duration > 0 && t >= rp.cfg.Duration
}

// A runGroup runs a replay's senders and serializes the rows they emit;
// the first row that cannot be written stops the run.
type runGroup struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	write  func(results.Row) error
	err    error
}

func newRunGroup(ctx context.Context, write func(results.Row) error) *runGroup {
	c, cancel := context.WithCancel(ctx)
	return &runGroup{parent: ctx, ctx: c, cancel: cancel, write: write}
}

// start runs f in a goroutine of the group.
func (g *runGroup) start(f func(ctx context.Context)) {
	g.wg.Go(func() { f(g.ctx) })
}

// emit writes a row; after a failed write every later one fails too.
func (g *runGroup) emit(row results.Row) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return g.err
	}
	if err := g.write(row); err != nil {
		g.err = fmt.Errorf("writing a row: %w", err)
		g.cancel()
	}
	return g.err
}

// wait waits for the group's goroutines and returns the write error, or
// the parent context's.
func (g *runGroup) wait() error {
	g.wg.Wait()
	g.cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.err, g.parent.Err())
}
