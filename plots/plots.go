// Package plots draws kvtier's figures (PNG and SVG) from the CSV files of
// a results directory alone. It is an engine: each suite registers its
// figure drawers from its own package (Register) and draws them with the
// figure kit here (Figure, Series, labels and ticks); a suite that
// registers none gets the figures it declares (results.Figure). A figure
// without data is not written; every figure says what it is (measured,
// stand-in, simulated, predicted). It names no suite.
package plots

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
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

// Emit saves f as name under dir/plots and records the files and the
// figure. Its title gets a line saying what its figures are: the kinds
// the drawer set, else those of the suite's rows, and the reference when
// one is drawn.
func Emit(dir, name string, f *Figure, res *Result) error {
	base, err := fileBase(dir, name)
	if err != nil {
		return err
	}
	kinds := f.Kinds
	if len(kinds) == 0 {
		var rows [][]results.Row
		for _, file := range res.suite.Files {
			rows = append(rows, res.run.Files[file.Name])
		}
		kinds = analysis.KindsOf(rows...)
	}
	if f.Reference {
		kinds = append(slices.Clone(kinds), analysis.Reference)
	}
	title, _, _ := strings.Cut(f.P.Title.Text, "\n")
	f.P.Title.Text += "\n(" + analysis.KindNote(kinds) + ")"
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
type Series struct {
	Label         string
	Dash          bool // drawn dashed
	X             []float64
	P10, P50, P90 []float64 // per X
}

// XYs returns the points (X, ys) with positive, finite coordinates.
func (s Series) XYs(ys []float64) plotter.XYs {
	out := make(plotter.XYs, 0, len(s.X))
	for i, x := range s.X {
		if x > 0 && ys[i] > 0 && Finite(ys[i]) {
			out = append(out, plotter.XY{X: x, Y: ys[i]})
		}
	}
	return out
}

// SeriesFigure returns a new figure with the series ss drawn (AddSeries);
// with no series it notes absent in res and returns no figure.
func SeriesFigure(res *Result, ss []Series, absent, title, xlabel, ylabel string) (*Figure, error) {
	if len(ss) == 0 {
		res.Absent = append(res.Absent, absent)
		return nil, nil
	}
	f := NewFigure(title, xlabel, ylabel)
	return f, AddSeries(f, ss)
}

// AddSeries draws each series as a p50 line with its p10–p90 band.
func AddSeries(f *Figure, ss []Series) error {
	bands := false
	for i, s := range ss {
		bands = bands || len(s.X) > 1
		if err := f.Band(s.XYs(s.P10), s.XYs(s.P90), i); err != nil {
			return err
		}
	}
	for i, s := range ss {
		if err := f.Line(s.XYs(s.P50), i, s.Dash, s.Label); err != nil {
			return err
		}
	}
	if bands {
		f.BandNote("line: p50; shaded band: p10–p90 of the samples")
	}
	return nil
}

// Collect summarises v over the ok rows of each x and returns a series.
func Collect(label string, rows []results.Row, x func(results.Row) float64, v func(results.Row) (float64, bool)) Series {
	byX := map[float64][]float64{}
	for _, r := range rows {
		val, good := v(r)
		if !good || !Finite(val) {
			continue
		}
		byX[x(r)] = append(byX[x(r)], val)
	}
	s := Series{Label: label}
	for _, k := range slices.Sorted(maps.Keys(byX)) {
		d := analysis.Summarize(byX[k])
		s.X = append(s.X, k)
		s.P10, s.P50, s.P90 = append(s.P10, d.P10), append(s.P50, d.P50), append(s.P90, d.P90)
	}
	return s
}

// SeriesOf collects a series over each key's rows, in the order of keys,
// and leaves out those with no point.
func SeriesOf[K comparable](keys []K, groups map[K][]results.Row, label func(K) string,
	x func(results.Row) float64, v func(results.Row) (float64, bool)) []Series {
	var ss []Series
	for _, k := range keys {
		if s := Collect(label(k), groups[k], x, v); len(s.X) > 0 {
			ss = append(ss, s)
		}
	}
	return ss
}

// AllX returns the x values of every series.
func AllX(ss []Series) []float64 {
	var xs []float64
	for _, s := range ss {
		xs = append(xs, s.X...)
	}
	return xs
}

// OKSeconds is an ok row's seconds, for Collect.
func OKSeconds(r results.Row) (float64, bool) { return r.Seconds, analysis.OK(r) }

// OKGBps is an ok row's rate in GB/s, where it has one, for Collect.
func OKGBps(r results.Row) (float64, bool) { return r.GBps, analysis.OK(r) && r.GBps > 0 }

// PrefixX is a row's prefix length, an x for Collect.
func PrefixX(r results.Row) float64 { return float64(r.PrefixTokens) }

// BytesX is a row's payload size, an x for Collect.
func BytesX(r results.Row) float64 { return float64(r.Bytes) }

// TokensLabel labels a tick in tokens (8k).
func TokensLabel(v float64) string { return units.FormatTokens(int64(math.Round(v))) }

// SecLabel labels a tick in seconds, in the unit that suits them.
func SecLabel(v float64) string { return units.FormatSeconds(v) }

// BytesLabel labels a tick in bytes, with an IEC unit.
func BytesLabel(v float64) string { return units.FormatBytes(v) }

// SILabel labels decades with an SI prefix: 100 MB, 1 GB, 10 TFLOP.
func SILabel(unit string) func(float64) string {
	return func(v float64) string {
		for _, p := range []struct {
			s string
			f float64
		}{{"P", 1e15}, {"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
			if v >= p.f {
				return PlainLabel(v/p.f) + " " + p.s + unit
			}
		}
		return PlainLabel(v) + " " + unit
	}
}

// PlainLabel labels a tick with the number as it is.
func PlainLabel(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
