package trace

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/units"
)

// drawTrace draws the LRU hit ratio against capacity per trace and
// instance count (with the plan's tier boundaries when the directory has
// a plan) and the working set over time.
func drawTrace(dir string, run *analysis.Run, res *plots.Result) error {
	if curve := run.FileWith(Suite.Name, results.ColCapacityBlocks); len(curve) > 0 {
		if err := drawHitCurve(dir, curve, run.Rows(PlanSuite.Name), res); err != nil {
			return err
		}
	} else {
		res.Absent = append(res.Absent, "no hit-ratio curve: its plot not drawn")
	}
	windows := run.FileWith(Suite.Name, results.ColTime)
	if len(windows) == 0 {
		res.Absent = append(res.Absent, "no working-set series: its plot not drawn")
		return nil
	}
	return drawWorkingSet(dir, windows, res)
}

// curveKey names one curve of trace_curve.csv.
type curveKey struct{ trace, instances, route string }

func (k curveKey) label() string {
	s := k.trace + ", 1 instance"
	if k.instances != "1" {
		s = fmt.Sprintf("%s, %s instances (route %s), per instance", k.trace, k.instances, k.route)
	}
	return s
}

func drawHitCurve(dir string, curve, plan []results.Row, res *plots.Result) error {
	var keys []curveKey
	pts := map[curveKey]plotter.XYs{}
	method := ""
	for _, r := range curve {
		k := curveKey{r.Get(results.ColTrace), r.Get(results.ColInstances), r.Get(results.ColRoute)}
		if _, seen := pts[k]; !seen {
			keys = append(keys, k)
		}
		x, y := r.Float(results.ColCapacityBytes), r.Float(results.ColHitRatio)
		if x > 0 && plots.Finite(y) {
			pts[k] = append(pts[k], plotter.XY{X: x, Y: 100 * y})
		}
		if r.Get(results.ColMethod) == "shards" {
			method = fmt.Sprintf(" (SHARDS sample %s)", r.Get(results.ColSampleRate))
		}
	}
	f := plots.NewFigure("LRU prefix hit ratio vs KV capacity"+method, "KV capacity per instance", "prefix hit ratio (% of input tokens)")
	f.Kinds = []string{analysis.Predicted}
	for i, k := range keys {
		l, err := f.Curve(pts[k], i)
		if err != nil {
			return err
		}
		f.AddLegend(k.label(), l)
	}
	if f.Legends() == 0 {
		res.Absent = append(res.Absent, "the hit-ratio curve has no point: its plot not drawn")
		return nil
	}
	var ceilTraces []string
	for _, r := range curve {
		if r.Get(results.ColInstances) == "1" && !slices.Contains(ceilTraces, r.Get(results.ColTrace)) {
			ceilTraces = append(ceilTraces, r.Get(results.ColTrace))
			if err := f.HLine(100*r.Float(results.ColCeiling), "APC ceiling (infinite cache), "+r.Get(results.ColTrace)); err != nil {
				return err
			}
		}
	}
	f.LogX(plots.BytesLabel, true)
	if err := markBoundaries(f, plan); err != nil {
		return err
	}
	f.P.Y.Min, f.P.Y.Max = 0, 100
	f.P.Y.Tick.Marker = plots.LinearTicks(func(v float64) string { return plots.PlainLabel(v) })
	return plots.Emit(dir, "trace_hitratio", f, res)
}

// boundaries returns the capacities where the plan's configurations put
// a tier boundary, with their labels: exclusive tiers stack (hbm, then
// hbm + dram, ...), inclusive ones each end at their own size.
func boundaries(plan []results.Row) map[float64]string {
	out := map[float64]string{}
	for _, r := range plan {
		inclusive := r.Get(results.ColInclusive) == "true"
		sum := 0.0
		var parts []string
		for _, t := range tierspec.CapacityNames() {
			b := r.Float(t + "_bytes")
			if !(b > 0) || math.IsInf(b, 0) {
				continue
			}
			parts = append(parts, t+" "+units.FormatBytes(b))
			x, label := sum+b, strings.Join(parts, " + ")
			if inclusive {
				x, label = b, t+" "+units.FormatBytes(b)
			} else {
				sum += b
			}
			if _, seen := out[x]; !seen {
				out[x] = label
			}
		}
	}
	return out
}

// markBoundaries draws the plan's tier boundaries as labelled vertical
// lines inside the x range.
func markBoundaries(f *plots.Figure, plan []results.Row) error {
	b := boundaries(plan)
	if len(b) == 0 {
		return nil
	}
	xs := make([]float64, 0, len(b))
	for x := range b {
		if x >= f.P.X.Min && x <= f.P.X.Max {
			xs = append(xs, x)
		}
	}
	slices.Sort(xs)
	var lbl plotter.XYLabels
	for i, x := range xs {
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: 100}})
		if err != nil {
			return err
		}
		l.Color, l.Width, l.Dashes = color.Gray{0x66}, vg.Points(0.8), []vg.Length{vg.Points(2), vg.Points(2)}
		f.P.Add(l)
		if i == 0 {
			f.AddLegend("plan's tier boundaries (exclusive tiers stack)", l)
		}
		lbl.XYs = append(lbl.XYs, plotter.XY{X: x, Y: 4 + float64(i%4)*7})
		lbl.Labels = append(lbl.Labels, b[x])
	}
	labels, err := plotter.NewLabels(lbl)
	if err != nil {
		return err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].Font.Size = 7
	}
	f.P.Add(labels)
	return nil
}

func drawWorkingSet(dir string, windows []results.Row, res *plots.Result) error {
	type key struct{ trace, window string }
	var keys []key
	pts := map[key]plotter.XYs{}
	for _, r := range windows {
		k := key{r.Get(results.ColTrace), r.Get(results.ColWindow)}
		if _, seen := pts[k]; !seen {
			keys = append(keys, k)
		}
		pts[k] = append(pts[k], plotter.XY{X: r.Float(results.ColTime), Y: r.Float(results.ColKVBytes)})
	}
	f := plots.NewFigure("Working set: distinct KV referenced in a sliding window", "time since the first request (s)", "KV bytes (whole blocks)")
	f.Kinds = analysis.KindsOf(windows)
	for i, k := range keys {
		l, err := f.Curve(pts[k], i)
		if err != nil {
			return err
		}
		f.AddLegend(fmt.Sprintf("%s, %s window (largest in each tenth of it)", k.trace, units.FormatSeconds(atof(k.window))), l)
	}
	f.LinearY(plots.BytesLabel)
	return plots.Emit(dir, "trace_workingset", f, res)
}

// drawPlan draws the predicted TTFT p90 against the HBM capacity, one
// line per size of the slower tiers; the predicted KV-load p90 where no
// TTFT could be predicted.
func drawPlan(dir string, run *analysis.Run, res *plots.Result) error {
	plan := gridRows(run.Rows(PlanSuite.Name))
	col, what, note := results.ColTTFTP90, "TTFT p90", ""
	if !slices.ContainsFunc(plan, func(r results.Row) bool { return plots.Finite(r.Float(col)) }) {
		col, what = results.ColLoadP90, "KV-load time p90"
		note = "TTFT not predicted: no measured cost for " + strings.ReplaceAll(plan[0].Get(results.ColMissing), ";", ", ")
		if ex := plan[0].Get(results.ColLoadExcludes); ex != "" {
			note += "; load leaves out " + strings.ReplaceAll(ex, ";", ", ")
		}
	}
	type key struct{ dram, disk, remote string }
	var keys []key
	pts := map[key]plotter.XYs{}
	for _, r := range plan {
		k := key{r.Get("dram_bytes"), r.Get("disk_bytes"), r.Get("remote_bytes")}
		if _, seen := pts[k]; !seen {
			keys = append(keys, k)
		}
		if x, y := r.Float("hbm_bytes"), r.Float(col); x > 0 && plots.Finite(y) {
			pts[k] = append(pts[k], plotter.XY{X: x, Y: y})
		}
	}
	title := fmt.Sprintf("Predicted %s vs HBM capacity\n(costs: %s)", what, cmp.Or(plan[0].Get(results.ColCostSource), "unknown"))
	f := plots.NewFigure(title, "HBM KV capacity", "predicted "+what)
	var xs []float64
	for i, k := range keys {
		slices.SortFunc(pts[k], func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		label := fmt.Sprintf("dram %s, disk %s, remote %s (predicted)", capLabel(k.dram), capLabel(k.disk), capLabel(k.remote))
		if err := f.Line(pts[k], i, false, label); err != nil {
			return err
		}
		for _, p := range pts[k] {
			xs = append(xs, p.X)
		}
	}
	if len(xs) == 0 {
		res.Absent = append(res.Absent, "plan.csv has no predicted figure: plan plot not drawn")
		return nil
	}
	if note != "" {
		f.BandNote(note)
	}
	f.LogX(plots.BytesLabel, true)
	f.TicksAt(xs, plots.BytesLabel)
	f.LinearY(plots.SecLabel)
	return plots.Emit(dir, "plan_ttft_p90", f, res)
}

func capLabel(s string) string {
	if s == "inf" || s == "0" || s == "" {
		return cmp.Or(s, "0")
	}
	return units.FormatBytes(atof(s))
}

func atof(s string) float64 {
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		return math.NaN()
	}
	return v
}
