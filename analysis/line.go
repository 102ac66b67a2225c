package analysis

import (
	"fmt"

	"gonum.org/v1/gonum/stat"

	"github.com/kvtier/kvtier/units"
)

// A Line is a cost y = Alpha + Slope·x fitted on relative residuals
// (weights 1/y²): a fixed cost per operation and a cost per byte or per
// FLOP.
type Line struct {
	Alpha, Slope float64
	R2           float64
	// Problems say what is wrong with the fit, in words: a negative fixed
	// cost (the line is then fitted through the origin instead, so no
	// negative cost is ever drawn, tabled or predicted from), a slope
	// that is not positive, a poor R².
	Problems []string
}

// FitLine fits the line through the points (xs[i], ys[i]), ys positive.
// It needs at least two distinct xs; the caller checks.
func FitLine(xs, ys []float64) Line {
	w := make([]float64, len(ys))
	for i, y := range ys {
		w[i] = 1 / (y * y)
	}
	var l Line
	l.Alpha, l.Slope = stat.LinearRegression(xs, ys, w, false)
	if l.Alpha < 0 {
		l.Problems = append(l.Problems, fmt.Sprintf("negative fixed cost (%s unconstrained): fitted through the origin", units.FormatSeconds(l.Alpha)))
		l.Alpha, l.Slope = stat.LinearRegression(xs, ys, w, true)
	}
	if l.Slope <= 0 {
		l.Problems = append(l.Problems, "time does not grow with size: slope ≤ 0")
	}
	l.R2 = stat.RSquared(xs, ys, w, l.Alpha, l.Slope)
	if l.R2 < MinR2 {
		l.Problems = append(l.Problems, fmt.Sprintf("poor fit: R² %.3f below %.2f", l.R2, MinR2))
	}
	return l
}
