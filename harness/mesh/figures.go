package mesh

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
)

// heat is a colour ramp for the matrices, light (low) to dark (high):
// viridis' anchors, readable in grey.
var heat = []color.RGBA{{0xfd, 0xe7, 0x25, 0xff}, {0x5e, 0xc9, 0x62, 0xff}, {0x21, 0x91, 0x8c, 0xff}, {0x3b, 0x52, 0x8b, 0xff}, {0x44, 0x01, 0x54, 0xff}}

// heatColor is the colour of v on [lo, hi].
func heatColor(v, lo, hi float64) color.RGBA {
	f := 0.0
	if hi > lo {
		f = math.Max(0, math.Min(1, (v-lo)/(hi-lo)))
	}
	x := f * float64(len(heat)-1)
	i := min(int(x), len(heat)-2)
	t := x - float64(i)
	mix := func(a, b uint8) uint8 { return uint8(float64(a) + t*(float64(b)-float64(a)) + 0.5) }
	a, b := heat[i], heat[i+1]
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 0xff}
}

// drawMeshMatrices draws one heat map per route, direction, layout and
// size: p50 GB/s of each source (row) → destination (column) pair; a
// store's file and title say store, a load's as before stores.
func drawMeshMatrices(dir string, run *analysis.Run, res *plots.Result) error {
	keys, stats := analysis.MeshCells(run.Rows(Suite.Name))
	type view struct {
		route, direction, layout string
		bytes                    int64
	}
	cells := map[view][]analysis.MeshCell{}
	var views []view
	n := 0
	for _, k := range keys {
		v := view{k.Route, k.Direction, k.Layout, k.Bytes}
		if cells[v] == nil {
			views = append(views, v)
		}
		cells[v] = append(cells[v], k)
		n = max(n, k.Src+1, k.Dst+1)
	}
	for _, v := range views {
		route, what := v.route, "reads"
		if v.direction != results.DirectionLoad {
			route, what = v.route+"_"+v.direction, "writes ("+v.direction+")"
		}
		title := fmt.Sprintf("Mesh: p50 GB/s of %s, source rank → destination rank (%s, %s, %s)", what, v.route, v.layout, units.FormatBytes(float64(v.bytes)))
		f, err := meshHeatMap(title, n, cells[v], stats)
		if err != nil {
			return err
		}
		if err := plots.Emit(dir, fmt.Sprintf("mesh_matrix_%s_%s_%d", route, v.layout, v.bytes), f, res); err != nil {
			return err
		}
	}
	return nil
}

// meshHeatMap draws the cells of one matrix of n ranks: source rank 0 on
// the top row, each cell coloured by its p50 and labelled with it
// (grey "err" or "skip" where it has no ok rep).
func meshHeatMap(title string, n int, cells []analysis.MeshCell, stats map[analysis.MeshCell]*analysis.MeshStat) (*plots.Figure, error) {
	f := plots.NewFigure(title, "destination rank (reads)", "source rank (pool)")
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, k := range cells {
		if g := stats[k].GBps; !math.IsNaN(g) {
			lo, hi = math.Min(lo, g), math.Max(hi, g)
		}
	}
	var labels plotter.XYLabels
	var dark []bool
	for _, k := range cells {
		st := stats[k]
		y := float64(n - 1 - k.Src)
		poly, err := plotter.NewPolygon(plotter.XYs{{X: float64(k.Dst) - .5, Y: y - .5}, {X: float64(k.Dst) + .5, Y: y - .5},
			{X: float64(k.Dst) + .5, Y: y + .5}, {X: float64(k.Dst) - .5, Y: y + .5}})
		if err != nil {
			return nil, err
		}
		poly.LineStyle.Color, poly.LineStyle.Width = color.White, vg.Points(1)
		text := "err"
		if st.N == 0 && st.NotOK > 0 && !slices.ContainsFunc(st.Rows, func(r results.Row) bool { return r.Status == results.StatusError }) {
			text = "skip"
		}
		c := color.RGBA{0xc8, 0xc8, 0xc8, 0xff}
		if !math.IsNaN(st.GBps) {
			c, text = heatColor(st.GBps, lo, hi), fmt.Sprintf("%.3g", st.GBps)
		}
		poly.Color = c
		dark = append(dark, 0.299*float64(c.R)+0.587*float64(c.G)+0.114*float64(c.B) < 128)
		f.P.Add(poly)
		if n <= 16 {
			labels.XYs = append(labels.XYs, plotter.XY{X: float64(k.Dst), Y: y})
			labels.Labels = append(labels.Labels, text)
		}
	}
	if err := f.CellLabels(labels, dark); err != nil {
		return nil, err
	}
	f.P.X.Min, f.P.X.Max, f.P.Y.Min, f.P.Y.Max = -.5, float64(n)-.5, -.5, float64(n)-.5
	var xt, yt plot.ConstantTicks
	for r := range n {
		xt = append(xt, plot.Tick{Value: float64(r), Label: fmt.Sprint(r)})
		yt = append(yt, plot.Tick{Value: float64(n - 1 - r), Label: fmt.Sprint(r)})
	}
	f.P.X.Tick.Marker, f.P.Y.Tick.Marker = xt, yt
	if !math.IsInf(lo, 0) {
		f.LegendSwatch(heatColor(lo, lo, hi), fmt.Sprintf("lightest: %.3g GB/s", lo))
		f.LegendSwatch(heatColor(hi, lo, hi), fmt.Sprintf("darkest: %.3g GB/s", hi))
	}
	f.LegendSwatch(color.Gray{0xc8}, "grey: no ok rep (err: error rows, skip: could not run)")
	return f, nil
}

// drawMeshPairs draws bandwidth against size for intra- and inter-node
// pairs (each route and layout a series over the samples of its pairs).
func drawMeshPairs(dir string, run *analysis.Run, res *plots.Result) error {
	type key struct{ pair, route, direction, layout string }
	keys, groups := analysis.GroupBy(run.Rows(Suite.Name), func(r results.Row) key {
		route := "net"
		if r.Get(results.ColPath) == "peercopy" {
			route = "peercopy"
		}
		return key{r.Get(results.ColPair), route, r.Direction(), r.Layout}
	}, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.route, b.route), cmp.Compare(a.direction, b.direction), cmp.Compare(a.pair, b.pair), cmp.Compare(a.layout, b.layout))
	})
	ss := plots.SeriesOf(keys, groups, func(k key) string {
		if k.direction != results.DirectionLoad {
			return fmt.Sprintf("%s-node pairs / %s %s / %s", k.pair, k.route, k.direction, k.layout)
		}
		return fmt.Sprintf("%s-node pairs / %s / %s", k.pair, k.route, k.layout)
	}, plots.BytesX, plots.OKGBps)
	f, err := plots.SeriesFigure(res, ss, "mesh.csv has no ok rows with a rate: intra/inter plot not drawn",
		"Mesh: intra- vs inter-node bandwidth vs size (samples of all pairs)", "transfer size", "bandwidth (GB/s)")
	if f == nil || err != nil {
		return err
	}
	f.LogX(plots.BytesLabel, true)
	f.TicksAt(plots.AllX(ss), plots.BytesLabel)
	f.LinearY(plots.PlainLabel)
	return plots.Emit(dir, "mesh_intra_inter", f, res)
}
