package knee

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
)

// kneeAxis is the x axis of the knee's figures: GPU KV in decimal GB as
// the reference's table, or in tokens where the model's geometry was
// unknown.
type kneeAxis struct {
	label string
	of    func(results.Row) float64
}

func kneeAxisOf(rows []results.Row) kneeAxis {
	for _, r := range rows {
		if math.IsNaN(r.Float(results.ColCapacityBytes)) {
			return kneeAxis{"GPU KV capacity (tokens)", func(r results.Row) float64 { return r.Float(results.ColCapacityTokens) }}
		}
	}
	return kneeAxis{"GPU KV capacity (GB)", func(r results.Row) float64 { return r.Float(results.ColCapacityBytes) / 1e9 }}
}

// drawKnee draws the realized APC and the TTFT p90 against the GPU KV
// capacity, the LRU model's predicted APC curve beside the measured
// points and the working set marked, as the reference's knee table.
func drawKnee(dir string, run *analysis.Run, res *plots.Result) error {
	rows := slices.Clone(run.FileWith(Suite.Name, results.ColAPCSource))
	slices.SortStableFunc(rows, func(a, b results.Row) int {
		return int(a.Float(results.ColCapacityTokens) - b.Float(results.ColCapacityTokens))
	})
	var measured []results.Row
	for _, r := range rows {
		if r.Status == results.StatusOK {
			measured = append(measured, r)
		}
	}
	if len(measured) == 0 {
		res.Absent = append(res.Absent, "knee: no capacity measured: its plots not drawn")
		return nil
	}
	ax := kneeAxisOf(rows)
	sim := ""
	if measured[0].Get(results.ColSimulated) == "true" {
		sim = " (kvtier simulator)"
	}
	if err := drawKneeAPC(dir, measured, run.FileWith(Suite.Name, results.ColOrder), ax, sim, res); err != nil {
		return err
	}
	return drawKneeTTFT(dir, measured, ax, sim, res)
}

func drawKneeAPC(dir string, rows, curve []results.Row, ax kneeAxis, sim string, res *plots.Result) error {
	f := plots.NewFigure("Realized APC vs GPU KV capacity"+sim, ax.label, "prefix-cache hit ratio (% of prompt tokens)")
	var pts plotter.XYs
	missing := 0
	for _, r := range rows {
		x, y := ax.of(r), 100*r.Float(results.ColAPC)
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(y, 0) {
			missing++ // no realized APC (no /metrics): no point
			continue
		}
		pts = append(pts, plotter.XY{X: x, Y: y})
	}
	if len(pts) == 0 {
		res.Absent = append(res.Absent, "knee: no capacity has a realized APC (the server's /metrics has no prefix-cache counters): knee_apc not drawn")
		return nil
	}
	if missing > 0 {
		res.Absent = append(res.Absent, fmt.Sprintf("knee: %d of %d capacities have no realized APC: not in knee_apc", missing, len(rows)))
	}
	if err := f.Line(pts, 0, false, "realized APC (server's /metrics: hits / queries)"); err != nil {
		return err
	}
	var model plotter.XYs
	order := ""
	for _, r := range curve {
		if x := ax.of(r); x > 0 {
			model = append(model, plotter.XY{X: x, Y: 100 * r.Float(results.ColHitRatio)})
			order = r.Get(results.ColOrder)
		}
	}
	if len(model) > 1 {
		l, err := f.Curve(model, 1)
		if err != nil {
			return err
		}
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		f.AddLegend("LRU model ("+order+" order): predicted, not measured", l)
	}
	f.P.X.Min, f.P.Y.Min, f.P.Y.Max = 0, 0, 100
	f.P.Y.Tick.Marker = plots.LinearTicks(plots.PlainLabel)
	f.P.X.Tick.Marker = plots.LinearTicks(plots.PlainLabel)
	if err := markWorkingSet(f, rows[0], ax, 100); err != nil {
		return err
	}
	return plots.Emit(dir, "knee_apc", f, res)
}

func drawKneeTTFT(dir string, rows []results.Row, ax kneeAxis, sim string, res *plots.Result) error {
	f := plots.NewFigure("TTFT vs GPU KV capacity"+sim, ax.label, "TTFT (s)")
	for i, p := range []struct{ col, name string }{{results.ColTTFTP90, "TTFT p90"}, {results.ColTTFTP50, "TTFT p50"}} {
		var pts plotter.XYs
		for _, r := range rows {
			if v := r.Float(p.col); v > 0 && !math.IsNaN(ax.of(r)) {
				pts = append(pts, plotter.XY{X: ax.of(r), Y: v})
			}
		}
		if err := f.Line(pts, i, i > 0, p.name); err != nil {
			return err
		}
	}
	f.LogY(func(v float64) string { return units.FormatSeconds(v) })
	f.P.X.Min = 0
	f.P.X.Tick.Marker = plots.LinearTicks(plots.PlainLabel)
	if err := markWorkingSet(f, rows[0], ax, f.P.Y.Max); err != nil {
		return err
	}
	return plots.Emit(dir, "knee_ttft", f, res)
}

// markWorkingSet draws the workload's working set as a vertical line up
// to top, when the rows know it.
func markWorkingSet(f *plots.Figure, r results.Row, ax kneeAxis, top float64) error {
	ws := r
	ws.Extra = map[string]string{results.ColCapacityBytes: r.Get(results.ColWorkingSetBytes), results.ColCapacityTokens: r.Get(results.ColWorkingSetTokens)}
	x := ax.of(ws)
	if !(x > 0) {
		return nil
	}
	bottom := f.P.Y.Min
	if bottom <= 0 {
		ymin, _ := f.YRange()
		bottom = math.Min(0, ymin)
	}
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: bottom}, {X: x, Y: top}})
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = color.Gray{0x44}, vg.Points(1), []vg.Length{vg.Points(2), vg.Points(2)}
	f.P.Add(l)
	f.AddLegend("working set (LRU model: no hit lost; predicted)", l)
	return nil
}
