package harness

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
)

// fakeRequests is a server whose request of each call takes the next of
// secs seconds; stopAfter calls trip its breaker, cancelAt cancels the
// run during that call.
type fakeRequests struct {
	secs      []float64
	calls     []int // the rep of each request sent, -1 for warm-up
	stopAfter int
	cancelAt  int
	cancel    context.CancelFunc
}

func (f *fakeRequests) caseOf() RequestCase {
	row := func(rep int) results.Row {
		r := results.NewRow("fake")
		r.Rep = rep
		return r
	}
	return RequestCase{
		Label: "fake",
		Do: func(ctx context.Context, rep int) results.Row {
			f.calls = append(f.calls, rep)
			if len(f.calls) == f.cancelAt {
				f.cancel()
			}
			r := row(rep)
			r.Status = results.StatusOK
			r.SetTime(f.secs[min(len(f.calls), len(f.secs))-1])
			return r
		},
		Skip: func(rep int, reason string) results.Row { r := row(rep); r.Skip(reason); return r },
		Stop: func() error {
			if f.stopAfter > 0 && len(f.calls) >= f.stopAfter {
				return errors.New("breaker tripped")
			}
			return nil
		},
	}
}

// Requests shares the Sampler's semantics: warm-up requests discarded,
// the reps the budget leaves, skipped rows once no request may go out,
// and a request cut short by the run's end never written.
func TestRequestsMeasure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		policy   Policy
		fake     fakeRequests
		calls    []int
		statuses []results.Status
		err      bool
	}{
		{"warm-up discarded", Policy{Warmup: 2, Reps: 3}, fakeRequests{secs: []float64{1}},
			[]int{-1, -1, 0, 1, 2}, []results.Status{results.StatusOK, results.StatusOK, results.StatusOK}, false},
		{"budget", Policy{Warmup: 1, Reps: 10, Budget: 3 * time.Second}, fakeRequests{secs: []float64{1}},
			[]int{-1, 0, 1, 2}, []results.Status{results.StatusOK, results.StatusOK, results.StatusOK}, false},
		{"breaker", Policy{Reps: 4}, fakeRequests{secs: []float64{1}, stopAfter: 2},
			[]int{0, 1}, []results.Status{results.StatusOK, results.StatusOK, results.StatusSkipped, results.StatusSkipped}, false},
		{"interrupted", Policy{Reps: 4}, fakeRequests{secs: []float64{1}, cancelAt: 2},
			[]int{0, 1}, []results.Status{results.StatusOK}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := tc.fake
			f.cancel = cancel
			sink := &resultstest.Sink{}
			s := &Requests{Suite: "fake", Sink: sink, Policy: tc.policy}
			res, err := s.Measure(ctx, f.caseOf())
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %v", err, tc.err)
			}
			var st []results.Status
			for i, r := range sink.Rows() {
				st = append(st, r.Status)
				if r.Rep != i {
					t.Errorf("row %d has rep %d", i, r.Rep)
				}
			}
			if !slices.Equal(f.calls, tc.calls) || !slices.Equal(st, tc.statuses) {
				t.Errorf("requests %v, rows %v; want %v, %v", f.calls, st, tc.calls, tc.statuses)
			}
			if !tc.err && res.Reps != len(tc.statuses) {
				t.Errorf("Reps %d, want %d", res.Reps, len(tc.statuses))
			}
		})
	}
}
