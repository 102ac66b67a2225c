package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
)

// barrier lets each of n callers of wait through once all n are waiting.
type barrier struct {
	mu   sync.Mutex
	n, k int
	open chan struct{}
}

func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	ch := b.open
	if b.k++; b.k == b.n {
		close(ch)
		b.open, b.k = make(chan struct{}), 0
	}
	b.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("not every case was sampling at once: %w", ctx.Err())
	}
}

// groupCases returns n cases of 100 bytes whose Fetches meet at one
// barrier (they deadlock unless run at once); case i takes i+1 ms, and
// its verification fails when badVerify is i.
func groupCases(n, badVerify int) []Case {
	b := &barrier{n: n, open: make(chan struct{})}
	cs := make([]Case, n)
	for i := range cs {
		fetches := 0
		row := results.NewRow("test")
		row.Bytes = 100
		cs[i] = Case{Row: row, Label: fmt.Sprintf("gpu%d", i), Timer: &stepTimer{per: float64(i+1) * 1e-3, fetches: &fetches},
			Fetch:  func(ctx context.Context) error { fetches++; return b.wait(ctx) },
			Verify: func() error { return map[bool]error{true: errors.New("bad byte")}[i == badVerify] }}
	}
	return cs
}

// TestMeasureGroup: the cases sample at once; per rep a row per case and
// an aggregate row with the slowest case's seconds and the summed bytes;
// a case that fails verification makes the aggregate an error row.
func TestMeasureGroup(t *testing.T) {
	t.Parallel()
	for _, bad := range []int{-1, 1} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		agg := Case{Row: results.NewRow("test"), Label: "all", Timer: &stepTimer{}, Verify: func() error { return nil }}
		agg.Row.Bytes = 300
		sink := &resultstest.Sink{}
		s := &Sampler{Suite: "test", Sink: sink, Policy: Policy{Warmup: 1, Reps: 2}}
		res, err := s.MeasureGroup(ctx, groupCases(3, bad), agg)
		cancel()
		if err != nil || res.Err != nil {
			t.Fatal(err, res.Err)
		}
		rows := sink.Rows()
		if len(rows) != 2*4 {
			t.Fatalf("bad %d: %d rows", bad, len(rows))
		}
		for _, a := range []results.Row{rows[3], rows[7]} {
			if bad < 0 && (a.Status != results.StatusOK || a.Seconds != 3e-3 || a.Bytes != 300 || a.Get("verified") != "true") {
				t.Errorf("aggregate %s %q: %g s, %d bytes, verified %q", a.Status, a.Reason, a.Seconds, a.Bytes, a.Get("verified"))
			}
			if bad >= 0 && (a.Status != results.StatusError || !strings.Contains(a.Reason, "gpu1: verify: bad byte")) {
				t.Errorf("aggregate after a failed verification: %s %q", a.Status, a.Reason)
			}
		}
		if bad < 0 && (res.Seconds.N != 2 || res.Seconds.P50 != 3e-3) {
			t.Errorf("result %+v", res.Seconds)
		}
		if r := rows[1]; (bad < 0 && r.Seconds != 2e-3) || r.Bytes != 100 || (bad < 0) != (r.Status == results.StatusOK) {
			t.Errorf("gpu1 rep 0: %s %q %g s, %d bytes", r.Status, r.Reason, r.Seconds, r.Bytes)
		}
	}
}
