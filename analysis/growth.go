package analysis

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/kvtier/kvtier/units"
)

// A Growth is a cost that grows with a prefix length L like a prefill
// does: y(L) = C + A·L + B·L², every coefficient at least 0. The linear
// term is the work per token (the projections, the MLP, a copy); the
// quadratic one is attention, each token reading every earlier one, so a
// measurement at 8k–64k extrapolates to 128k along the curve prefill
// follows rather than along the last straight segment.
type Growth struct {
	C, A, B    float64 // Seconds, seconds/token, seconds/token²
	R2         float64 // weighted (1/y²) coefficient of determination
	N          int     // points fitted
	MinL, MaxL float64 // the measured range of L
	// Problems say what is wrong with the fit, in words; empty when the
	// fit is sound. A negative fixed cost or a poor R² is one.
	Problems []string
}

// MinR2 is the least R² a sound fit has.
const MinR2 = 0.9

// At returns the fitted cost at L.
func (g Growth) At(L float64) float64 { return g.C + g.A*L + g.B*L*L }

// Extrapolated reports whether L lies past the longest measured length.
func (g Growth) Extrapolated(L float64) bool { return L > g.MaxL }

// FitGrowth fits y = C + A·L + B·L² to the points (ls[i], ys[i]) by
// least squares on relative residuals (weights 1/y², as timing noise is
// relative), every coefficient at least 0: of the fits on each subset of
// the three terms, the feasible one with the least residual, ties going
// to the one with the fixed cost and the linear term (the fewer terms the
// data need). Where the unconstrained fit of those terms has a negative
// fixed cost (two prefix lengths often give one), the fit says so in
// Problems and the cost is fitted without it. It needs at least two
// distinct lengths.
func FitGrowth(ls, ys []float64) (Growth, error) {
	g := Growth{N: len(ls), MinL: math.Inf(1), MaxL: math.Inf(-1)}
	if len(ls) != len(ys) {
		return g, fmt.Errorf("%d lengths, %d costs", len(ls), len(ys))
	}
	for i, l := range ls {
		if !(l > 0) || !(ys[i] > 0) || math.IsInf(l, 0) || math.IsInf(ys[i], 0) {
			return g, fmt.Errorf("point %d (L %g, cost %g): both must be positive", i, l, ys[i])
		}
		g.MinL, g.MaxL = min(g.MinL, l), max(g.MaxL, l)
	}
	if distinctCount(ls) < 2 {
		return g, fmt.Errorf("%d distinct prefix lengths: at least 2 needed", distinctCount(ls))
	}
	free := []bool{true, true, distinctCount(ls) >= 3}
	if c, ok := solve(ls, ys, free); ok && c[0] < 0 {
		g.Problems = append(g.Problems, fmt.Sprintf("negative fixed cost (%s unconstrained): fitted without one", units.FormatSeconds(c[0])))
	}
	best, bestRes := []float64(nil), math.Inf(1)
	for _, s := range subsets {
		c, ok := solve(ls, ys, s)
		if !ok || slices.ContainsFunc(c, func(v float64) bool { return v < 0 }) {
			continue
		}
		if r := residual(ls, ys, c); r < bestRes*(1-1e-9) {
			best, bestRes = c, r
		}
	}
	if best == nil {
		return g, fmt.Errorf("no fit with non-negative coefficients")
	}
	g.C, g.A, g.B = best[0], best[1], best[2]
	g.R2 = rSquared(ls, ys, bestRes)
	if g.R2 < MinR2 {
		g.Problems = append(g.Problems, fmt.Sprintf("poor fit: R² %.3f below %.2f", g.R2, MinR2))
	}
	return g, nil
}

// subsets are the terms (C, A, B) a fit may use, in order of preference.
var subsets = [][]bool{
	{true, true, true}, {true, true, false}, {false, true, true}, {true, false, true},
	{false, true, false}, {false, false, true}, {true, false, false},
}

// solve fits the free terms by weighted least squares; ok is false when
// the system is singular (fewer distinct points than terms).
func solve(ls, ys []float64, free []bool) ([]float64, bool) {
	var cols []int
	for j, f := range free {
		if f {
			cols = append(cols, j)
		}
	}
	if distinctCount(ls) < len(cols) {
		return nil, false
	}
	a := mat.NewDense(len(ls), len(cols), nil)
	b := mat.NewVecDense(len(ls), nil)
	for i, l := range ls {
		w := 1 / ys[i]
		for k, j := range cols {
			a.Set(i, k, w*math.Pow(l, float64(j)))
		}
		b.SetVec(i, w*ys[i])
	}
	var x mat.VecDense
	if err := x.SolveVec(a, b); err != nil {
		return nil, false
	}
	c := make([]float64, 3)
	for k, j := range cols {
		c[j] = x.AtVec(k)
	}
	return c, true
}

// residual is the sum of squared relative residuals of coefficients c.
func residual(ls, ys, c []float64) float64 {
	s := 0.0
	for i, l := range ls {
		r := (ys[i] - (c[0] + c[1]*l + c[2]*l*l)) / ys[i]
		s += r * r
	}
	return s
}

// rSquared is 1 − residual/total of the weighted (1/y²) fit.
func rSquared(ls, ys []float64, res float64) float64 {
	var sw, swy float64
	for _, y := range ys {
		w := 1 / (y * y)
		sw += w
		swy += w * y
	}
	mean, tot := swy/sw, 0.0
	for _, y := range ys {
		tot += (y - mean) * (y - mean) / (y * y)
	}
	if tot == 0 {
		return 1
	}
	return 1 - res/tot
}

func distinctCount(xs []float64) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return len(slices.Compact(s))
}
