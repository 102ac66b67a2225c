package sweep

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
)

func drawSweep(dir string, run *analysis.Run, res *plots.Result) error {
	keys, groups := analysis.GroupBy(run.Rows(Suite.Name), analysis.SweepKeyOf, analysis.CompareSweepKeys)
	ss := plots.SeriesOf(keys, groups, analysis.SweepKey.Label, plots.PrefixX, plots.OKSeconds)
	title, per := curveTitle(run.Rows(Suite.Name))
	f, err := plots.SeriesFigure(res, ss, "sweep.csv has no ok rows: tier curve not drawn",
		title, "prefix length L (tokens)", per)
	if err != nil {
		return err
	}
	if f != nil {
		f.LogX(plots.TokensLabel, true)
		f.TicksAt(plots.AllX(ss), plots.TokensLabel)
		f.LogY(plots.SecLabel)
		if err := plots.Emit(dir, "sweep_tiers", f, res); err != nil {
			return err
		}
	}
	return drawCostModel(dir, run, res)
}

// curveTitle is the tier curve's title and y label by what the rows
// measured: loads (bringing a prefix back), stores (writing it out to
// the tier) or both.
func curveTitle(rows []results.Row) (title, per string) {
	loads := len(results.Loads(rows))
	switch {
	case loads == len(rows):
		return "Device tiers: time to bring back an L-token KV prefix", "time per fetch"
	case loads == 0:
		return "Device tiers: time to write an L-token KV prefix out to a tier", "time per store"
	}
	return "Device tiers: time to load or store an L-token KV prefix", "time per transfer"
}

func drawCostModel(dir string, run *analysis.Run, res *plots.Result) error {
	fits, _ := analysis.Fits(run.Rows(Suite.Name))
	if len(fits) == 0 {
		res.Absent = append(res.Absent, "no sweep configuration has two prefix lengths: cost-model plot not drawn")
		return nil
	}
	var tiers []string
	for _, f := range fits {
		if !slices.Contains(tiers, f.Key.Tier) {
			tiers = append(tiers, f.Key.Tier)
		}
	}
	for _, tier := range tiers {
		var fs []analysis.Fit
		var rows []results.Row
		for _, f := range fits {
			if f.Key.Tier == tier {
				fs = append(fs, f)
			}
		}
		for _, r := range run.Rows(Suite.Name) {
			if r.Tier == tier {
				rows = append(rows, r)
			}
		}
		xl, model := "payload (bytes)", "t = α + bytes/β"
		xfmt := plots.SILabel("B")
		if fs[0].Regressor == "flops" {
			xl, model, xfmt = "prefill work (FLOPs)", "t = α + flops/rate", plots.SILabel("FLOP")
		}
		_, per := curveTitle(rows)
		fig := plots.NewFigure(fmt.Sprintf("Tier cost model: %s (%s)", tier, model), xl, per)
		fig.Kinds = analysis.KindsOf(rows)
		for i, f := range fs {
			if err := addFit(fig, f, i); err != nil {
				return err
			}
		}
		fig.LogX(xfmt, false)
		fig.LogY(plots.SecLabel)
		if err := plots.Emit(dir, "costmodel_"+plots.Slug(tier), fig, res); err != nil {
			return err
		}
	}
	return nil
}

// addFit draws one fitted configuration on fig: its measured points and
// the fitted line, with α, the rate and R² in the legend.
func addFit(fig *plots.Figure, f analysis.Fit, i int) error {
	pts := make(plotter.XYs, 0, len(f.X))
	for j := range f.X {
		if f.X[j] > 0 && f.Y[j] > 0 {
			pts = append(pts, plotter.XY{X: f.X[j], Y: f.Y[j]})
		}
	}
	c, _ := plots.Style(i)
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Color = c
	sc.GlyphStyle.Radius = 2
	sc.GlyphStyle.Shape = plots.Glyph(i)
	fig.P.Add(sc)
	fig.Extend(pts)
	lo, hi := slices.Min(f.X), slices.Max(f.X)
	var curve plotter.XYs
	for k := 0; k <= 60; k++ {
		x := lo * math.Pow(hi/lo, float64(k)/60)
		if y := f.Predict(x); y > 0 {
			curve = append(curve, plotter.XY{X: x, Y: y})
		}
	}
	rate := fmt.Sprintf("β=%.3g GB/s", f.Rate/1e9)
	switch {
	case math.IsInf(f.Rate, 1):
		rate = "no growth with size (slope ≤ 0)"
	case f.Regressor == "flops":
		rate = fmt.Sprintf("rate=%.3g TFLOP/s", f.Rate/1e12)
	}
	label := fmt.Sprintf("%s: α=%s %s R²=%.3f", f.Key.Short(), units.FormatSeconds(f.Alpha), rate, f.R2)
	thumbs := []plot.Thumbnailer{sc}
	if len(curve) >= 2 {
		l, err := fig.Curve(curve, i)
		if err != nil {
			return err
		}
		thumbs = append(thumbs, l)
	}
	fig.AddLegend(label, thumbs...)
	return nil
}
