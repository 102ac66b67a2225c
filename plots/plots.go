// Package plots draws kvtier's figures (PNG and SVG) from the CSV files of
// a results directory alone: the device four-tier curve, the HTTP
// four-tier TTFT curve, MB1's penalty against prefill size and its token
// timelines, MB2's bandwidth against size, and the fitted tier cost model
// over its measured points. A figure without data is not written; a host
// backend series is labelled as the CPU stand-in it is.
package plots

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/units"
)

// A Result lists what Draw wrote and which suites it found nothing for.
type Result struct {
	Files   []string          // paths of the PNG and SVG files, and of the figure index
	Figures []analysis.Figure // every figure drawn, as the index lists it
	Absent  []string          // one line per figure of a suite that ran not drawn, with why
	NotRun  []string          // the main files of the suites with figures that did not run here

	run   *analysis.Run // the run being drawn
	suite results.Suite // the suite being drawn
}

// A Drawer draws a suite's figures from a run into dir, adding what it
// wrote to res.
type Drawer func(dir string, run *analysis.Run, res *Result) error

var drawers = map[string][]Drawer{}

// Register adds a drawer for the suite called suite; it is called from
// init functions of the files that draw each suite.
func Register(suite string, d Drawer) { drawers[suite] = append(drawers[suite], d) }

func drawersOf(suite string) []Drawer { return drawers[suite] }

func init() {
	Register("sweep", drawSweep)
	Register("probe", drawProbe)
	Register("mb1", drawMB1)
	Register("transfer", drawTransfer)
}

// Dir draws every plot the CSV files in dir allow into dir/plots and
// returns the paths it wrote. Use Draw to learn which suites were absent.
func Dir(dir string) ([]string, error) {
	r, err := Draw(dir)
	if err != nil {
		return nil, err
	}
	return r.Files, nil
}

// ErrDraw is matched by errors.Is when a plot of readable results could
// not be drawn or written (a full disk): the input was not at fault.
var ErrDraw = errors.New("drawing plots")

// Draw is Dir that also says which suites had nothing to draw. It fails
// when dir holds no kvtier CSV or a file cannot be read, and with an
// error wrapping ErrDraw when a plot cannot be drawn or written.
func Draw(dir string) (*Result, error) {
	run, err := analysis.Load(dir)
	if err != nil {
		return nil, err
	}
	res := &Result{run: run}
	for _, suite := range results.Suites() {
		res.suite = suite
		ds := slices.Concat(drawersOf(suite.Name), declared(suite))
		if len(ds) == 0 {
			continue
		}
		n := 0
		for _, f := range suite.Files {
			n += len(run.Files[f.Name])
		}
		if n == 0 {
			res.NotRun = append(res.NotRun, suite.Main().Name)
			continue
		}
		for _, d := range ds {
			if err := d(dir, run, res); err != nil {
				return res, fmt.Errorf("%w: %w", ErrDraw, err)
			}
		}
	}
	if len(res.Figures) == 0 {
		return res, nil
	}
	if err := analysis.WriteFigures(filepath.Join(dir, analysis.PlotsDir), res.Figures); err != nil {
		return res, fmt.Errorf("plots: %w", err)
	}
	res.Files = append(res.Files, filepath.Join(dir, analysis.PlotsDir, analysis.FigureIndex))
	return res, nil
}

// emit saves f as name under dir/plots and records the files and the
// figure. Its title gets a line saying what its figures are: the kinds
// the drawer set, else those of the suite's rows, and the reference when
// one is drawn.
func emit(dir, name string, f *figure, res *Result) error {
	base, err := fileBase(dir, name)
	if err != nil {
		return err
	}
	kinds := f.kinds
	if len(kinds) == 0 {
		var rows [][]results.Row
		for _, file := range res.suite.Files {
			rows = append(rows, res.run.Files[file.Name])
		}
		kinds = analysis.KindsOf(rows...)
	}
	if f.reference {
		kinds = append(slices.Clone(kinds), analysis.Reference)
	}
	title, _, _ := strings.Cut(f.p.Title.Text, "\n")
	f.p.Title.Text += "\n(" + analysis.KindNote(kinds) + ")"
	files, err := f.save(base)
	res.Files = append(res.Files, files...)
	fig := analysis.Figure{Name: name, Suite: res.suite.Name, Title: title, Kinds: kinds}
	for _, p := range files {
		fig.Files = append(fig.Files, filepath.Base(p))
	}
	res.Figures = append(res.Figures, fig)
	return err
}

// A series is the p10/p50/p90 of one configuration over x.
type series struct {
	label         string
	dash          bool
	x             []float64
	p10, p50, p90 []float64
}

func (s series) xys(ys []float64) plotter.XYs {
	out := make(plotter.XYs, 0, len(s.x))
	for i, x := range s.x {
		if x > 0 && ys[i] > 0 && finite(ys[i]) {
			out = append(out, plotter.XY{X: x, Y: ys[i]})
		}
	}
	return out
}

// seriesFigure returns a new figure with the series ss drawn (addSeries);
// with no series it notes absent in res and returns no figure.
func seriesFigure(res *Result, ss []series, absent, title, xlabel, ylabel string) (*figure, error) {
	if len(ss) == 0 {
		res.Absent = append(res.Absent, absent)
		return nil, nil
	}
	f := newFigure(title, xlabel, ylabel)
	return f, addSeries(f, ss)
}

// addSeries draws each series as a p50 line with its p10–p90 band.
func addSeries(f *figure, ss []series) error {
	bands := false
	for i, s := range ss {
		bands = bands || len(s.x) > 1
		if err := f.band(s.xys(s.p10), s.xys(s.p90), i); err != nil {
			return err
		}
	}
	for i, s := range ss {
		if err := f.line(s.xys(s.p50), i, s.dash, s.label); err != nil {
			return err
		}
	}
	if bands {
		f.bandNote("line: p50; shaded band: p10–p90 of the samples")
	}
	return nil
}

// collect summarises v over the ok rows of each x and returns a series.
func collect(label string, rows []results.Row, x func(results.Row) float64, v func(results.Row) (float64, bool)) series {
	byX := map[float64][]float64{}
	for _, r := range rows {
		val, good := v(r)
		if !good || !finite(val) {
			continue
		}
		byX[x(r)] = append(byX[x(r)], val)
	}
	s := series{label: label}
	for _, k := range slices.Sorted(maps.Keys(byX)) {
		d := analysis.Summarize(byX[k])
		s.x = append(s.x, k)
		s.p10, s.p50, s.p90 = append(s.p10, d.P10), append(s.p50, d.P50), append(s.p90, d.P90)
	}
	return s
}

// seriesOf collects a series over each key's rows, in the order of keys,
// and leaves out those with no point.
func seriesOf[K comparable](keys []K, groups map[K][]results.Row, label func(K) string,
	x func(results.Row) float64, v func(results.Row) (float64, bool)) []series {
	var ss []series
	for _, k := range keys {
		if s := collect(label(k), groups[k], x, v); len(s.x) > 0 {
			ss = append(ss, s)
		}
	}
	return ss
}

// allX returns the x values of every series.
func allX(ss []series) []float64 {
	var xs []float64
	for _, s := range ss {
		xs = append(xs, s.x...)
	}
	return xs
}

func okSeconds(r results.Row) (float64, bool) { return r.Seconds, analysis.OK(r) }
func okGBps(r results.Row) (float64, bool)    { return r.GBps, analysis.OK(r) && r.GBps > 0 }
func prefixX(r results.Row) float64           { return float64(r.PrefixTokens) }
func bytesX(r results.Row) float64            { return float64(r.Bytes) }

func tokensLabel(v float64) string { return units.FormatTokens(int64(math.Round(v))) }
func secLabel(v float64) string    { return units.FormatSeconds(v) }
func bytesLabel(v float64) string  { return units.FormatBytes(v) }

// siLabel labels decades with an SI prefix: 100 MB, 1 GB, 10 TFLOP.
func siLabel(unit string) func(float64) string {
	return func(v float64) string {
		for _, p := range []struct {
			s string
			f float64
		}{{"P", 1e15}, {"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
			if v >= p.f {
				return plainLabel(v/p.f) + " " + p.s + unit
			}
		}
		return plainLabel(v) + " " + unit
	}
}

func plainLabel(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func drawSweep(dir string, run *analysis.Run, res *Result) error {
	keys, groups := analysis.GroupBy(run.Rows("sweep"), analysis.SweepKeyOf, analysis.CompareSweepKeys)
	ss := seriesOf(keys, groups, analysis.SweepKey.Label, prefixX, okSeconds)
	f, err := seriesFigure(res, ss, "sweep.csv has no ok rows: tier curve not drawn",
		"Device tiers: time to bring back an L-token KV prefix", "prefix length L (tokens)", "time per fetch")
	if err != nil {
		return err
	}
	if f != nil {
		f.logX(tokensLabel, true)
		f.ticksAt(allX(ss), tokensLabel)
		f.logY(secLabel)
		if err := emit(dir, "sweep_tiers", f, res); err != nil {
			return err
		}
	}
	return drawCostModel(dir, run, res)
}

func drawCostModel(dir string, run *analysis.Run, res *Result) error {
	fits, _ := analysis.Fits(run.Rows("sweep"))
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
		for _, r := range run.Rows("sweep") {
			if r.Tier == tier {
				rows = append(rows, r)
			}
		}
		xl, model := "payload (bytes)", "t = α + bytes/β"
		xfmt := siLabel("B")
		if fs[0].Regressor == "flops" {
			xl, model, xfmt = "prefill work (FLOPs)", "t = α + flops/rate", siLabel("FLOP")
		}
		fig := newFigure(fmt.Sprintf("Tier cost model: %s (%s)", tier, model), xl, "time per fetch")
		fig.kinds = analysis.KindsOf(rows)
		for i, f := range fs {
			if err := addFit(fig, f, i); err != nil {
				return err
			}
		}
		fig.logX(xfmt, false)
		fig.logY(secLabel)
		if err := emit(dir, "costmodel_"+slug(tier), fig, res); err != nil {
			return err
		}
	}
	return nil
}

// addFit draws one fitted configuration on fig: its measured points and
// the fitted line, with α, the rate and R² in the legend.
func addFit(fig *figure, f analysis.Fit, i int) error {
	pts := make(plotter.XYs, 0, len(f.X))
	for j := range f.X {
		if f.X[j] > 0 && f.Y[j] > 0 {
			pts = append(pts, plotter.XY{X: f.X[j], Y: f.Y[j]})
		}
	}
	c, _ := style(i)
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Color = c
	sc.GlyphStyle.Radius = 2
	sc.GlyphStyle.Shape = glyphs[i%len(glyphs)]
	fig.p.Add(sc)
	fig.extend(pts)
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
		l, err := fig.curve(curve, i)
		if err != nil {
			return err
		}
		thumbs = append(thumbs, l)
	}
	fig.legend = append(fig.legend, legendEntry{name: label, thumbs: thumbs})
	return nil
}

func drawProbe(dir string, run *analysis.Run, res *Result) error {
	type key struct {
		tier string
		sim  bool
	}
	keys, groups := analysis.GroupBy(run.Rows("probe"), func(r results.Row) key {
		return key{r.Tier, r.Get(results.ColSimulated) == "true"}
	}, func(a, b key) int {
		return cmp.Or(cmp.Compare(slices.Index(tierspec.ProbeNames(), a.tier), slices.Index(tierspec.ProbeNames(), b.tier)), cmp.Compare(a.tier, b.tier), analysis.CompareBool(a.sim, b.sim))
	})
	var ss []series
	colour := map[string]int{} // tier -> the colour of its first series
	for _, k := range keys {
		label := fmt.Sprintf("%s (http)", tierName(k.tier))
		if k.sim {
			label = fmt.Sprintf("%s (http, simulated)", tierName(k.tier))
		}
		s := collect(label, groups[k], prefixX, func(r results.Row) (float64, bool) {
			return analysis.ProbeTTFT(r), analysis.ProbeCounted(r)
		})
		if len(s.x) > 0 {
			if _, seen := colour[k.tier]; !seen {
				colour[k.tier] = len(ss)
			}
			ss = append(ss, s)
		}
	}
	f, err := seriesFigure(res, ss, "probe.csv has no verified ok rows: TTFT curve not drawn",
		"HTTP four tiers: time to first token of a reused prefix", "prefix length L (tokens)", "time to first token")
	if f == nil || err != nil {
		return err
	}
	xs := allX(ss)
	for _, tier := range tierspec.ProbeNames() {
		i, seen := colour[tier]
		if !seen {
			i = len(ss) + len(colour)
			colour[tier] = i
		}
		var pts plotter.XYs
		for _, ref := range analysis.ReferenceTTFT {
			pts = append(pts, plotter.XY{X: float64(ref.L), Y: ref.Tier(tier)})
			xs = append(xs, float64(ref.L))
		}
		if err := f.refLine(pts, i, tierName(tier)+": "+analysis.Reference); err != nil {
			return err
		}
	}
	f.logX(tokensLabel, true)
	f.ticksAt(xs, tokensLabel)
	f.logY(secLabel)
	return emit(dir, "probe_ttft", f, res)
}

// tierName is an HTTP tier's name in the figures' legends.
func tierName(t string) string {
	if d, ok := tierspec.Lookup(t); ok && d.Probe == t && d.ProbeLabel != "" {
		return d.ProbeLabel
	}
	return t
}

func drawMB1(dir string, run *analysis.Run, res *Result) error {
	type key struct {
		arm string
		d   int
	}
	rows := slices.DeleteFunc(slices.Clone(run.Rows("mb1")), func(r results.Row) bool {
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
	var ss []series
	var idx []int
	for _, k := range keys {
		s := collect(fmt.Sprintf("D=%d %s", k.d, k.arm), groups[k],
			func(r results.Row) float64 { return float64(atoi(r.Get(results.ColPrefillTokens))) },
			func(r results.Row) (float64, bool) { return r.Float(results.ColPenalty), analysis.OK(r) })
		if len(s.x) == 0 {
			continue
		}
		if k.arm == "control" {
			s.dash = true
			s.label += " (prefill elsewhere)"
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
func drawPenalty(dir string, ss []series, idx, ds []int, res *Result) error {
	f := newFigure("MB1: decode slowdown while a prefill of P tokens runs", "prefill length P (tokens)", "penalty (eff. / base TPOT)")
	for j, s := range ss {
		i := idx[j]
		if err := f.band(s.xys(s.p10), s.xys(s.p90), i); err != nil {
			return err
		}
		if err := f.line(s.xys(s.p50), i, s.dash, s.label); err != nil {
			return err
		}
	}
	f.bandNote("line: p50 over reps; shaded band: p10–p90")
	xs := allX(ss)
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
		if err := f.refLine(refs[d], i, fmt.Sprintf("D=%d interfere: %s", d, analysis.Reference)); err != nil {
			return err
		}
	}
	f.logX(tokensLabel, true)
	f.ticksAt(xs, tokensLabel)
	f.logY(func(v float64) string { return plainLabel(v) + "×" })
	return emit(dir, "mb1_penalty", f, res)
}

// drawTimelines draws the token arrivals of one cell per D: the largest P
// of the interference arm, its first rep.
func drawTimelines(dir string, run *analysis.Run, res *Result) error {
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
func drawTimeline(dir string, run *analysis.Run, c timelineCell, res *Result) error {
	var pts plotter.XYs
	inject, done := math.NaN(), math.NaN()
	for _, t := range run.Tokens {
		if t.Arm == "interfere" && t.D == c.d && t.P == c.p && t.Rep == c.rep && finite(t.T) {
			pts = append(pts, plotter.XY{X: t.T, Y: float64(t.Stream)})
			inject, done = t.Inject, t.PrefillDone
		}
	}
	if len(pts) == 0 {
		return nil
	}
	title := fmt.Sprintf("MB1 token arrivals: D=%d decode streams, prefill P=%s (rep %d)", c.d, units.FormatTokens(int64(c.p)), c.rep)
	f := newFigure(title, "time since the cell started (s)", "decode stream")
	f.extend(pts)
	if finite(inject) && finite(done) && done > inject {
		if err := addPrefillWindow(f, inject, done); err != nil {
			return err
		}
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Color = palette[0]
	sc.GlyphStyle.Radius = 1.4
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	f.p.Add(sc)
	f.legend = append(f.legend, legendEntry{"one decoded token", []plot.Thumbnailer{sc}})
	f.p.Y.Min, f.p.Y.Max = f.ymin-0.7, f.ymax+0.7
	f.p.Y.Tick.Marker = streamTicks{}
	f.p.X.Min = math.Min(0, f.xmin)
	f.p.X.Max = f.xmax * 1.02
	f.p.X.Tick.Marker = linearTicks(plainLabel)
	return emit(dir, fmt.Sprintf("mb1_timeline_D%d_P%d", c.d, c.p), f, res)
}

// addPrefillWindow shades the time from the prefill's send to its first
// token across every stream of f.
func addPrefillWindow(f *figure, inject, done float64) error {
	lo, hi := f.ymin-0.5, f.ymax+0.5
	win, err := plotter.NewPolygon(plotter.XYs{{X: inject, Y: lo}, {X: done, Y: lo}, {X: done, Y: hi}, {X: inject, Y: hi}})
	if err != nil {
		return err
	}
	win.Color = translucent(palette[1], 0x40)
	win.LineStyle.Width = 0
	f.p.Add(win)
	f.legend = append(f.legend, legendEntry{fmt.Sprintf("prefill window: sent at %.3g s, first token at %.3g s", inject, done), []plot.Thumbnailer{win}})
	return nil
}

func drawTransfer(dir string, run *analysis.Run, res *Result) error {
	type key struct{ path, transport, layout, mem string }
	rows := run.Rows("transfer")
	keys, groups := analysis.GroupBy(rows, func(r results.Row) key { return key{r.Get(results.ColPath), r.Transport, r.Layout, memOf(r)} },
		func(a, b key) int {
			return cmp.Or(cmp.Compare(a.path, b.path), cmp.Compare(a.transport, b.transport), cmp.Compare(a.layout, b.layout), cmp.Compare(a.mem, b.mem))
		})
	lines := map[float64]string{}
	for _, r := range rows {
		if lg := r.Float(results.ColLineGBPerSecond); lg > 0 && analysis.OK(r) {
			lines[lg] = r.Get(results.ColDevice)
		}
	}
	ss := seriesOf(keys, groups, func(k key) string {
		return analysis.JoinNonEmpty(" / ", k.path, k.transport, k.layout, k.mem)
	}, bytesX, okGBps)
	f, err := seriesFigure(res, ss, "transfer.csv has no ok rows with a rate: bandwidth plot not drawn",
		"MB2: KV transfer bandwidth vs size (path / transport / layout / memory)", "transfer size", "bandwidth (GB/s)")
	if f == nil || err != nil {
		return err
	}
	for _, lr := range slices.Sorted(maps.Keys(lines)) {
		name := fmt.Sprintf("line rate %.3g GB/s", lr)
		if dev := lines[lr]; dev != "" {
			name += " (" + dev + ")"
		}
		if err := f.hline(lr, name); err != nil {
			return err
		}
	}
	if err := drawTransferReference(f); err != nil {
		return err
	}
	f.logX(bytesLabel, true)
	f.ticksAt(allX(ss), bytesLabel)
	f.linearY(plainLabel)
	return emit(dir, "transfer_bw", f, res)
}

// drawTransferReference draws the reference's bandwidth per path across
// the figure's sizes: the reference gives one rate per path, not one per
// size.
func drawTransferReference(f *figure) error {
	paths := slices.Sorted(maps.Keys(analysis.ReferenceMB2))
	for j, path := range paths {
		gb := analysis.ReferenceMB2[path]
		pts := plotter.XYs{{X: f.xmin, Y: gb}, {X: f.xmax, Y: gb}}
		name := fmt.Sprintf("%s %s GB/s (mean over sizes): %s", path, units.FormatSig(gb), analysis.Reference)
		if err := f.refLine(pts, len(palette)-1-j, name); err != nil {
			return err
		}
	}
	return nil
}

func memOf(r results.Row) string {
	s, d := r.Get(results.ColSrcMem), r.Get(results.ColDstMem)
	if s == "" && d == "" {
		return ""
	}
	return s + "→" + d
}

func atoi(s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		return 0
	}
	return n
}
