package mb1

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
)

func drawMB1(dir string, run *analysis.Run, res *plots.Result) error {
	type key struct {
		arm string
		d   int
	}
	rows := slices.DeleteFunc(slices.Clone(run.Rows(Suite.Name)), func(r results.Row) bool {
		return r.Get(results.ColArm) != "interfere" && r.Get(results.ColArm) != "control"
	})
	keys, groups := analysis.GroupBy(rows, func(r results.Row) key { return key{r.Get(results.ColArm), atoi(r.Get(results.ColDecodeStreams))} },
		func(a, b key) int { return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(b.arm, a.arm)) })
	ds := []int{}
	for _, k := range keys {
		if !slices.Contains(ds, k.d) {
			ds = append(ds, k.d)
		}
	}
	var ss []plots.Series
	var idx []int
	for _, k := range keys {
		s := plots.Collect(fmt.Sprintf("D=%d %s", k.d, k.arm), groups[k],
			func(r results.Row) float64 { return float64(atoi(r.Get(results.ColPrefillTokens))) },
			func(r results.Row) (float64, bool) { return r.Float(results.ColPenalty), analysis.OK(r) })
		if len(s.X) == 0 {
			continue
		}
		if k.arm == "control" {
			s.Dash = true
			s.Label += " (prefill elsewhere)"
		}
		ss = append(ss, s)
		idx = append(idx, slices.Index(ds, k.d))
	}
	if len(ss) == 0 {
		res.Absent = append(res.Absent, "mb1.csv has no ok interfere or control rows: penalty plot not drawn")
	} else if err := drawPenalty(dir, ss, idx, ds, res); err != nil {
		return err
	}
	return drawTimelines(dir, run, res)
}

// drawPenalty draws MB1's penalty against P: one colour per D, the
// control arm in its D's colour dashed, the reference's cells dotted.
func drawPenalty(dir string, ss []plots.Series, idx, ds []int, res *plots.Result) error {
	f := plots.NewFigure("MB1: decode slowdown while a prefill of P tokens runs", "prefill length P (tokens)", "penalty (eff. / base TPOT)")
	for j, s := range ss {
		i := idx[j]
		if err := f.Band(s.XYs(s.P10), s.XYs(s.P90), i); err != nil {
			return err
		}
		if err := f.Line(s.XYs(s.P50), i, s.Dash, s.Label); err != nil {
			return err
		}
	}
	f.BandNote("line: p50 over reps; shaded band: p10–p90")
	xs := plots.AllX(ss)
	refs := map[int]plotter.XYs{}
	var refDs []int
	for _, c := range analysis.ReferenceMB1 {
		if _, seen := refs[c.D]; !seen {
			refDs = append(refDs, c.D)
		}
		refs[c.D] = append(refs[c.D], plotter.XY{X: float64(c.P), Y: c.Penalty})
		xs = append(xs, float64(c.P))
	}
	for _, d := range refDs {
		i := slices.Index(ds, d)
		if i < 0 {
			i = len(ds) + slices.Index(refDs, d)
		}
		if err := f.RefLine(refs[d], i, fmt.Sprintf("D=%d interfere: %s", d, analysis.Reference)); err != nil {
			return err
		}
	}
	f.LogX(plots.TokensLabel, true)
	f.TicksAt(xs, plots.TokensLabel)
	f.LogY(func(v float64) string { return plots.PlainLabel(v) + "×" })
	return plots.Emit(dir, "mb1_penalty", f, res)
}

// drawTimelines draws the token arrivals of one cell per D: the largest P
// of the interference arm, its first rep.
func drawTimelines(dir string, run *analysis.Run, res *plots.Result) error {
	if len(run.Tokens) == 0 {
		res.Absent = append(res.Absent, "mb1_tokens.csv absent or empty: token timelines not drawn")
		return nil
	}
	for _, c := range timelineCells(run) {
		if err := drawTimeline(dir, run, c, res); err != nil {
			return err
		}
	}
	return nil
}

// A timelineCell is the MB1 interference cell and rep a timeline draws.
type timelineCell struct{ d, p, rep int }

// timelineCells picks, per D, the interference cell with the largest P
// and its first rep; four Ds spread over the range if there are more.
func timelineCells(run *analysis.Run) []timelineCell {
	best := map[int]timelineCell{}
	for _, t := range run.Tokens {
		if t.Arm != "interfere" {
			continue
		}
		c, seen := best[t.D]
		if !seen || t.P > c.p || (t.P == c.p && t.Rep < c.rep) {
			best[t.D] = timelineCell{t.D, t.P, t.Rep}
		}
	}
	ds := slices.Sorted(maps.Keys(best))
	if len(ds) > 4 {
		ds = []int{ds[0], ds[len(ds)/3], ds[2*len(ds)/3], ds[len(ds)-1]}
	}
	cells := make([]timelineCell, len(ds))
	for i, d := range ds {
		cells[i] = best[d]
	}
	return cells
}

// drawTimeline draws cell c's token arrivals, one dot per token, over
// its prefill window; nothing if it has no token with a time.
func drawTimeline(dir string, run *analysis.Run, c timelineCell, res *plots.Result) error {
	var pts plotter.XYs
	inject, done := math.NaN(), math.NaN()
	for _, t := range run.Tokens {
		if t.Arm == "interfere" && t.D == c.d && t.P == c.p && t.Rep == c.rep && plots.Finite(t.T) {
			pts = append(pts, plotter.XY{X: t.T, Y: float64(t.Stream)})
			inject, done = t.Inject, t.PrefillDone
		}
	}
	if len(pts) == 0 {
		return nil
	}
	title := fmt.Sprintf("MB1 token arrivals: D=%d decode streams, prefill P=%s (rep %d)", c.d, units.FormatTokens(int64(c.p)), c.rep)
	f := plots.NewFigure(title, "time since the cell started (s)", "decode stream")
	f.Extend(pts)
	if plots.Finite(inject) && plots.Finite(done) && done > inject {
		if err := addPrefillWindow(f, inject, done); err != nil {
			return err
		}
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Color = plots.Color(0)
	sc.GlyphStyle.Radius = 1.4
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	f.P.Add(sc)
	f.AddLegend("one decoded token", sc)
	ymin, ymax := f.YRange()
	xmin, xmax := f.XRange()
	f.P.Y.Min, f.P.Y.Max = ymin-0.7, ymax+0.7
	f.P.Y.Tick.Marker = plots.StreamTicks{}
	f.P.X.Min = math.Min(0, xmin)
	f.P.X.Max = xmax * 1.02
	f.P.X.Tick.Marker = plots.LinearTicks(plots.PlainLabel)
	return plots.Emit(dir, fmt.Sprintf("mb1_timeline_D%d_P%d", c.d, c.p), f, res)
}

// addPrefillWindow shades the time from the prefill's send to its first
// token across every stream of f.
func addPrefillWindow(f *plots.Figure, inject, done float64) error {
	ymin, ymax := f.YRange()
	lo, hi := ymin-0.5, ymax+0.5
	win, err := plotter.NewPolygon(plotter.XYs{{X: inject, Y: lo}, {X: done, Y: lo}, {X: done, Y: hi}, {X: inject, Y: hi}})
	if err != nil {
		return err
	}
	win.Color = plots.Translucent(plots.Color(1), 0x40)
	win.LineStyle.Width = 0
	f.P.Add(win)
	f.AddLegend(fmt.Sprintf("prefill window: sent at %.3g s, first token at %.3g s", inject, done), win)
	return nil
}

func atoi(s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		return 0
	}
	return n
}
