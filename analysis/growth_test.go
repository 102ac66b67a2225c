package analysis

import (
	"math"
	"strings"
	"testing"
)

func TestGrowthExtrapolatesLikePrefill(t *testing.T) {
	t.Parallel()
	// A miss measured at 8k–64k: 50 ms fixed, 100 µs/token, and an
	// attention term that is 40 % of the time at 64k.
	truth := func(L float64) float64 { return 0.05 + 1e-4*L + 1.1e-9*L*L }
	for _, tc := range []struct {
		name string
		ls   []float64
	}{
		{"four lengths", []float64{8192, 16384, 32768, 65536}},
		{"three lengths", []float64{8192, 32768, 65536}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ys []float64
			for _, l := range tc.ls {
				ys = append(ys, truth(l))
			}
			g, err := FitGrowth(tc.ls, ys)
			if err != nil {
				t.Fatal(err)
			}
			const L = 126976
			got, want := g.At(L), truth(L)
			if math.Abs(got-want)/want > 0.03 {
				t.Errorf("at %d tokens: %.3f s, quadratic truth %.3f s (a straight line from the last two points gives %.3f s)",
					L, got, want, ys[len(ys)-2]+(L-tc.ls[len(ys)-2])*(ys[len(ys)-1]-ys[len(ys)-2])/(tc.ls[len(ys)-1]-tc.ls[len(ys)-2]))
			}
			if !g.Extrapolated(L) || g.Extrapolated(65536) {
				t.Errorf("extrapolated past %g: %v at %d, %v at 64k", g.MaxL, g.Extrapolated(L), L, g.Extrapolated(65536))
			}
			if len(g.Problems) != 0 || g.R2 < 0.999 {
				t.Errorf("problems %q, R² %g on exact data", g.Problems, g.R2)
			}
		})
	}
}

func TestGrowthTwoPointsNegativeIntercept(t *testing.T) {
	t.Parallel()
	// Two lengths whose straight line crosses zero above L = 0: the
	// intercept is −145 µs.
	ls := []float64{4096, 16384}
	ys := []float64{1.0e-3, 4.0e-3 + 145e-6*3}
	g, err := FitGrowth(ls, ys)
	if err != nil {
		t.Fatal(err)
	}
	if g.C < 0 || g.A < 0 || g.B < 0 {
		t.Errorf("coefficients %g %g %g: none may be negative", g.C, g.A, g.B)
	}
	if len(g.Problems) == 0 || !strings.Contains(g.Problems[0], "negative fixed cost") {
		t.Errorf("problems %q, want the negative fixed cost named", g.Problems)
	}
	for i, l := range ls {
		if math.Abs(g.At(l)-ys[i])/ys[i] > 1e-6 {
			t.Errorf("at %g: %g, measured %g", l, g.At(l), ys[i])
		}
	}
}

func TestGrowthRefusesTooLittle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ls, ys []float64
		want   string
	}{
		{[]float64{1024}, []float64{1}, "at least 2"},
		{[]float64{1024, 1024}, []float64{1, 2}, "at least 2"},
		{[]float64{1024, 2048}, []float64{1, 0}, "must be positive"},
	} {
		if _, err := FitGrowth(tc.ls, tc.ys); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want %q", tc.ls, tc.ys, err, tc.want)
		}
	}
}

func TestLineNegativeFixedCost(t *testing.T) {
	t.Parallel()
	// Two sizes whose line has α = −2.27 ms.
	xs := []float64{1e9, 4e9}
	ys := []float64{0.1 - 2.27e-3, 0.4 - 2.27e-3}
	l := FitLine(xs, ys)
	if l.Alpha < 0 {
		t.Errorf("α %g: a negative fixed cost must not be used", l.Alpha)
	}
	if len(l.Problems) == 0 || !strings.Contains(l.Problems[0], "negative fixed cost (-2.27 ms") {
		t.Errorf("problems %q", l.Problems)
	}
	good := FitLine(xs, []float64{0.1 + 1e-3, 0.4 + 1e-3})
	if len(good.Problems) != 0 || math.Abs(good.Alpha-1e-3) > 1e-9 {
		t.Errorf("α %g, problems %q on a sound line", good.Alpha, good.Problems)
	}
}
