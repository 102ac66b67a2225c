package harness

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/tiers"
)

// TestBefore checks that Case.Before runs before every sample, warm-up
// included, outside the timed part, and that its failure is an error row
// that ends the case.
func TestBefore(t *testing.T) {
	t.Parallel()
	const pause = 30 * time.Millisecond
	var calls, fetches int
	var failAt int
	c := Case{
		Row:   results.NewRow("test"),
		Timer: &tiers.ClockTimer{},
		Fetch: func(context.Context) error { fetches++; return nil },
		Before: func() error {
			calls++
			if calls == failAt {
				return errors.New("file removed")
			}
			time.Sleep(pause)
			return nil
		},
	}
	sink := &resultstest.Sink{}
	s := &Sampler{Suite: "test", Sink: sink, Policy: Policy{Warmup: 2, Reps: 3}}
	res, err := s.Measure(context.Background(), c)
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	if calls != 5 || fetches != 5 {
		t.Errorf("Before ran %d times for %d fetches, want 5 and 5", calls, fetches)
	}
	for _, r := range sink.Rows() {
		if r.Status != results.StatusOK || r.Seconds >= pause.Seconds() {
			t.Errorf("rep %d: %s %.3f s: Before was timed", r.Rep, r.Status, r.Seconds)
		}
	}
	calls, fetches, failAt = 0, 0, 4
	sink.Reset()
	res, err = s.Measure(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err == nil || res.Errors != 1 || sink.Len() != 2 || fetches != 3 {
		t.Fatalf("failing Before: %v, %d error rows of %d, %d fetches", res.Err, res.Errors, sink.Len(), fetches)
	}
	if r := sink.Rows()[1]; r.Status != results.StatusError || !strings.Contains(r.Reason, "file removed") {
		t.Errorf("row after a failing Before: %s %q", r.Status, r.Reason)
	}
}

// TestSummaryText: a case's progress line gives its p50 in the unit that
// suits it with three significant digits ("5.45 s", not "5452.728 ms").
func TestSummaryText(t *testing.T) {
	t.Parallel()
	s := &Sampler{Policy: Policy{Reps: 5}}
	tests := []struct {
		p50   float64
		bytes int64
		want  string
	}{
		{5.452728, 0, "p50    5.45 s  n=5"},
		{0.013714, 100_000_000, "p50   13.7 ms      7.29 GB/s  n=5"},
		{0.0009996, 0, "p50   1.00 ms  n=5"},
	}
	for _, tt := range tests {
		c := &Case{Row: results.NewRow("test")}
		c.Row.Bytes = tt.bytes
		got, ok := s.summaryText(c, Result{Seconds: results.Stats{N: 5, P50: tt.p50}, Reps: 5})
		if !ok || got != tt.want {
			t.Errorf("p50 %g: %q, want %q", tt.p50, got, tt.want)
		}
	}
}

// TestPolicySamples: the samples a run's estimate counts are those the
// Sampler takes: every warm-up and rep within the budget, fewer past it,
// at least one of each.
func TestPolicySamples(t *testing.T) {
	t.Parallel()
	p := Policy{Warmup: 2, Reps: 5, Budget: 30 * time.Second}
	for sec, want := range map[float64]int{0.1: 7, 10: 5, 40: 2} {
		if got := p.Samples(sec); got != want {
			t.Errorf("Samples(%g s) = %d, want %d", sec, got, want)
		}
	}
	if got := (Policy{Warmup: 1, Reps: 3}).Samples(100); got != 4 {
		t.Errorf("no budget: Samples = %d, want 4", got)
	}
}
