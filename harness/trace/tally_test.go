package trace

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvtier/kvtier/results"
)

// A tally gives Describe's statistics exactly up to tallyExact values
// and, past them, the count, mean, deviation and extremes exactly and the
// percentiles within a bucket's width; NaN is counted as added, not as a
// value.
func TestTally(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name  string
		n     int
		value func() float64
		tol   float64 // of the percentiles, relative
	}{
		{"few", 1000, func() float64 { return math.Exp(rng.NormFloat64()) }, 0},
		{"many", tallyExact + 5000, func() float64 { return 1e-3 * math.Exp(2*rng.NormFloat64()) }, 1.0 / (1 << bucketBits)},
		{"many equal", tallyExact + 5000, func() float64 { return []float64{0, 0.3, 3.3}[rng.IntN(3)] }, 0},
	} {
		var tl tally
		var xs []float64
		for i := range tc.n {
			x := tc.value()
			if i%100 == 0 {
				x = math.NaN()
			}
			tl.add(x)
			xs = append(xs, x)
		}
		got, want := tl.stats(), results.Describe(xs)
		if tl.added != tc.n || got.N != want.N || got.Min != want.Min || got.Max != want.Max || got.Values != nil {
			t.Errorf("%s: %d added, %+v, want %+v", tc.name, tl.added, got, want)
		}
		for _, s := range []struct {
			name      string
			got, want float64
			tol       float64
		}{
			{"mean", got.Mean, want.Mean, 1e-12}, {"stddev", got.Stddev, want.Stddev, 1e-9},
			{"p10", got.P10, want.P10, tc.tol}, {"p50", got.P50, want.P50, tc.tol},
			{"p90", got.P90, want.P90, tc.tol}, {"p99", got.P99, want.P99, tc.tol},
		} {
			if math.Abs(s.got-s.want) > s.tol*math.Abs(s.want) {
				t.Errorf("%s: %s %v, want %v (within %g)", tc.name, s.name, s.got, s.want, s.tol)
			}
		}
	}
}
