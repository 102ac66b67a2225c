package harness

import (
	"context"
	"fmt"
	"testing"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
)

// stepTimer reads as if each Fetch since Start took per seconds.
type stepTimer struct {
	per     float64
	fetches *int
	at      int
}

func (s *stepTimer) Start() error { s.at = *s.fetches; return nil }
func (s *stepTimer) Stop() (float64, error) {
	return float64(*s.fetches-s.at) * s.per, nil
}
func (s *stepTimer) Kind() string { return "events" }

// TestRepeatSmallPlans: a Repeat case whose warm-up sample took under
// MinSample runs Fetch back to back until a sample lasts MinSample; rows
// give the time per Fetch and the count in repeat. A case over MinSample,
// or one without Repeat, runs once per sample.
func TestRepeatSmallPlans(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		per    float64
		repeat bool
		want   int
	}{{100e-6, true, 10}, {3e-6, true, 334}, {2e-3, true, 1}, {100e-6, false, 1}} {
		fetches := 0
		hc := Case{Row: results.NewRow("test"), Timer: &stepTimer{per: c.per, fetches: &fetches},
			Fetch: func(context.Context) error { fetches++; return nil }, Repeat: c.repeat}
		sink := &resultstest.Sink{}
		s := &Sampler{Suite: "test", Sink: sink, Policy: Policy{Warmup: 1, Reps: 2}}
		if res, err := s.Measure(context.Background(), hc); err != nil || res.Err != nil {
			t.Fatal(err, res.Err)
		}
		if fetches != 1+2*c.want {
			t.Errorf("%g s a fetch: %d fetches, want %d", c.per, fetches, 1+2*c.want)
		}
		for _, r := range sink.Rows() {
			got := r.Get("repeat")
			if r.Seconds < c.per*0.999 || r.Seconds > c.per*1.001 || c.repeat && got != fmt.Sprint(c.want) || !c.repeat && got != "" {
				t.Errorf("%g s a fetch: row seconds %g, repeat %q", c.per, r.Seconds, got)
			}
		}
	}
}
