package plots

import (
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// Figure size: the plot area is 6 × 4 in; the legend goes below it so that
// it never covers data, and the figure grows to hold it.
const (
	figWidth  = 6 * vg.Inch
	plotHight = 4 * vg.Inch
	pngDPI    = 150
)

// palette is the Okabe–Ito set, distinct for colour-blind readers; the
// yellow is left out because it vanishes on white.
var palette = []color.Color{
	color.RGBA{0x00, 0x72, 0xB2, 0xff}, // blue
	color.RGBA{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	color.RGBA{0x00, 0x9E, 0x73, 0xff}, // green
	color.RGBA{0xCC, 0x79, 0xA7, 0xff}, // purple
	color.RGBA{0xE6, 0x9F, 0x00, 0xff}, // orange
	color.RGBA{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	color.RGBA{0x00, 0x00, 0x00, 0xff}, // black
}

// dashes cycle once the colours are used up, so that every series differs
// from every other even in grey print.
var dashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)},
}

// Style returns the colour and dash pattern of series i.
func Style(i int) (color.Color, []vg.Length) {
	return palette[i%len(palette)], dashes[(i/len(palette))%len(dashes)]
}

// Translucent returns c with alpha a (for bands).
func Translucent(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	// Premultiplied: scale the channels by the new alpha.
	f := float64(a) / 255
	return color.RGBA{uint8(float64(r>>8) * f), uint8(float64(g>>8) * f), uint8(float64(b>>8) * f), a}
}

// A figure is a plot with its legend entries, drawn below the plot.
type Figure struct {
	P      *plot.Plot // the plot drawn on
	legend []legendEntry
	// x and y ranges of the data, for axes the figure sets itself, and
	// the smallest positive x and y, where a log axis starts.
	xmin, xmax, ymin, ymax float64
	xpos, ypos             float64
	// kinds say what the figures are (analysis.Measured, ...); Emit takes
	// the suite's when none is set. reference is set once a reference
	// curve is drawn.
	Kinds     []string
	Reference bool
}

// AddLegend adds a legend entry: name beside the thumbnails drawn for it.
func (f *Figure) AddLegend(name string, thumbs ...plot.Thumbnailer) {
	f.legend = append(f.legend, legendEntry{name, thumbs})
}

type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// NewFigure returns an empty figure: a grid, the title and the axis
// labels.
func NewFigure(title, xlabel, ylabel string) *Figure {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 12
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = 11
		a.Tick.Label.Font.Size = 9
		a.Padding = vg.Points(2)
	}
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{0xe0}
	g.Horizontal.Color = color.Gray{0xe0}
	g.Vertical.Width = vg.Points(0.5)
	g.Horizontal.Width = vg.Points(0.5)
	p.Add(g)
	inf := math.Inf(1)
	return &Figure{P: p, xmin: inf, xmax: -inf, ymin: inf, ymax: -inf, xpos: inf, ypos: inf}
}

// XRange returns the smallest and largest x of the data drawn so far.
func (f *Figure) XRange() (lo, hi float64) { return f.xmin, f.xmax }

// YRange returns the smallest and largest y of the data drawn so far.
func (f *Figure) YRange() (lo, hi float64) { return f.ymin, f.ymax }

// Legends returns how many legend entries the figure has.
func (f *Figure) Legends() int { return len(f.legend) }

// Color is the colour of style i.
func Color(i int) color.Color { return palette[i%len(palette)] }

// Glyph is the point shape of series i.
func Glyph(i int) draw.GlyphDrawer { return glyphs[i%len(glyphs)] }

// Styles is how many colours (and dash patterns) Style cycles through.
var Styles = len(palette)

// Extend widens the recorded data range by the finite points of xys.
func (f *Figure) Extend(xys plotter.XYs) {
	for _, pt := range xys {
		if Finite(pt.X) && Finite(pt.Y) {
			f.xmin, f.xmax = math.Min(f.xmin, pt.X), math.Max(f.xmax, pt.X)
			f.ymin, f.ymax = math.Min(f.ymin, pt.Y), math.Max(f.ymax, pt.Y)
			f.xpos, f.ypos = positiveMin(f.xpos, pt.X), positiveMin(f.ypos, pt.Y)
		}
	}
}

// positiveMin is the smaller of m and x where x is positive, else m.
func positiveMin(m, x float64) float64 {
	if x > 0 {
		return math.Min(m, x)
	}
	return m
}

// Finite reports whether x is neither NaN nor infinite.
func Finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// curve adds a plain polyline (no markers) in series Style i.
func (f *Figure) Curve(xys plotter.XYs, i int) (*plotter.Line, error) {
	c, d := Style(i)
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(1.4), d
	f.P.Add(l)
	f.Extend(xys)
	return l, nil
}

// bandNote adds the legend entry that explains the shaded bands.
func (f *Figure) BandNote(text string) {
	poly, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return
	}
	poly.Color = Translucent(color.Gray{0x60}, 0x50)
	poly.LineStyle.Width = 0
	f.AddLegend(text, poly)
}

// line adds a polyline with markers in series Style i.
func (f *Figure) Line(xys plotter.XYs, i int, dashed bool, name string) error {
	if len(xys) == 0 {
		return nil
	}
	c, d := Style(i)
	if dashed {
		d = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(1.6), d
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.2), Shape: glyphs[i%len(glyphs)]}
	f.P.Add(l, s)
	f.Extend(xys)
	if name != "" {
		f.AddLegend(name, l, s)
	}
	return nil
}

var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{},
}

// band adds the Translucent area between lo and hi (same x) in Style i.
func (f *Figure) Band(lo, hi plotter.XYs, i int) error {
	if len(lo) < 2 || len(lo) != len(hi) {
		return nil // a band needs two x values
	}
	c, _ := Style(i)
	ring := make(plotter.XYs, 0, 2*len(lo))
	ring = append(ring, lo...)
	for _, h := range slices.Backward(hi) {
		ring = append(ring, h)
	}
	poly, err := plotter.NewPolygon(ring)
	if err != nil {
		return err
	}
	poly.Color = Translucent(c, 0x38)
	poly.LineStyle.Width = 0
	f.P.Add(poly)
	f.Extend(ring)
	return nil
}

// logX and logY put the axes on log scales with ticks labelled by label,
// and set their ranges from the data with a margin (gonum's own range
// padding can go below zero, which a log axis cannot show).
func (f *Figure) LogX(label func(float64) string, base2 bool) {
	f.P.X.Scale = logScale{}
	f.P.X.Tick.Marker = logTicks{label: label, base2: base2}
	f.P.X.Min, f.P.X.Max = logRange(f.xpos, f.xmax)
}

// ticksAt labels the x axis at the values measured (prefix lengths,
// transfer sizes) when there are few enough to read.
func (f *Figure) TicksAt(xs []float64, label func(float64) string) {
	slices.Sort(xs)
	xs = slices.Compact(xs)
	if len(xs) == 0 || len(xs) > 10 {
		return
	}
	var ticks plot.ConstantTicks
	for _, x := range xs {
		ticks = append(ticks, plot.Tick{Value: x, Label: label(x)})
	}
	f.P.X.Tick.Marker = ticks
}

// linearY starts the y axis at zero with round ticks.
func (f *Figure) LinearY(label func(float64) string) {
	f.P.Y.Min, f.P.Y.Max = 0, f.ymax*1.12
	f.P.Y.Tick.Marker = LinearTicks(label)
}

// LinearTicks returns a ticker with 4 to 7 labelled round steps.
func LinearTicks(label func(float64) string) plot.Ticker {
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		span := max - min
		if !(span > 0) {
			return []plot.Tick{{Value: min, Label: label(min)}}
		}
		step := math.Pow(10, math.Floor(math.Log10(span/5)))
		for _, m := range []float64{1, 2, 5, 10} {
			if span/(step*m) <= 7 {
				step *= m
				break
			}
		}
		var ticks []plot.Tick
		for v := math.Ceil(min/step) * step; v <= max+step*1e-9; v += step {
			v := math.Round(v/step) * step // no 0.30000000000000004
			ticks = append(ticks, plot.Tick{Value: v, Label: label(v)})
		}
		return ticks
	})
}

// LogY makes the y axis logarithmic over the data, labelled by label.
func (f *Figure) LogY(label func(float64) string) {
	f.P.Y.Scale = logScale{}
	f.P.Y.Tick.Marker = logTicks{label: label}
	f.P.Y.Min, f.P.Y.Max = logRange(f.ypos, f.ymax)
}

// logScale is gonum's LogScale, except that a value a log axis cannot
// show (zero, negative, NaN: a corrupt CSV's, a server's) is put off the
// axis, where lines are clipped and markers and ticks are not drawn,
// instead of panicking.
type logScale struct{}

func (logScale) Normalize(min, max, x float64) float64 {
	if !(x > 0) || !(min > 0) || !(max > 0) {
		return -1
	}
	return plot.LogScale{}.Normalize(min, max, x)
}

func logRange(lo, hi float64) (float64, float64) {
	if !(lo > 0) || !Finite(lo) || !Finite(hi) || hi < lo {
		return 1, 10
	}
	if hi/lo < 2 {
		m := math.Sqrt(lo * hi)
		return m / 1.6, m * 1.6
	}
	return lo / 1.25, hi * 1.25
}

// logTicks labels powers of ten (or two) with a formatter and puts minor
// ticks between them.
type logTicks struct {
	label func(float64) string
	base2 bool
}

func (t logTicks) Ticks(min, max float64) []plot.Tick {
	// gonum pads the plot for every tick label it is given, in range or
	// not, so only ticks inside [min, max] are returned.
	var in []plot.Tick
	for _, tk := range t.all(min, max) {
		if tk.Value >= min*(1-1e-9) && tk.Value <= max*(1+1e-9) {
			in = append(in, tk)
		}
	}
	return in
}

func (t logTicks) all(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	if t.base2 {
		e0, e1 := math.Floor(math.Log2(min)), math.Ceil(math.Log2(max))
		step := math.Max(1, math.Ceil((e1-e0)/8)) // at most ~8 labels
		for e := e0; e <= e1; e++ {
			v := math.Exp2(e)
			lbl := ""
			if math.Mod(e-e0, step) == 0 {
				lbl = t.label(v)
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: lbl})
		}
		return ticks
	}
	e0, e1 := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	for e := e0; e <= e1; e++ {
		v := math.Pow(10, e)
		ticks = append(ticks, plot.Tick{Value: v, Label: t.label(v)})
		for k := 2.0; k < 10; k++ {
			ticks = append(ticks, plot.Tick{Value: k * v})
		}
	}
	// Few decades: label the 2× and 5× ticks too, or every tick when the
	// range is narrower still.
	span := math.Log10(max / min)
	for i := range ticks {
		if ticks[i].Label != "" {
			continue
		}
		m := ticks[i].Value / math.Pow(10, math.Floor(math.Log10(ticks[i].Value)+1e-9))
		if span < 0.6 || (span < 2.2 && (math.Abs(m-2) < 1e-6 || math.Abs(m-5) < 1e-6)) {
			ticks[i].Label = t.label(ticks[i].Value)
		}
	}
	return ticks
}

// save writes the figure as base.png and base.svg and returns the paths.
func (f *Figure) save(base string) ([]string, error) {
	var out []string
	for _, ext := range []string{"png", "svg"} {
		path := base + "." + ext
		if err := f.write(path, ext); err != nil {
			return out, fmt.Errorf("plots: %s: %w", path, err)
		}
		out = append(out, path)
	}
	return out, nil
}

const legendFont = 9

// legends splits the entries into one or two columns of legends and
// returns them with the height they need.
func (f *Figure) legends() ([]*plot.Legend, vg.Length) {
	if len(f.legend) == 0 {
		return nil, 0
	}
	cols := 2
	for _, e := range f.legend {
		if len(e.name) > 42 {
			cols = 1
		}
	}
	if len(f.legend) < 4 {
		cols = 1
	}
	per := (len(f.legend) + cols - 1) / cols
	var ls []*plot.Legend
	var h vg.Length
	for k := range cols {
		l := plot.NewLegend()
		l.Top, l.Left = true, true
		l.TextStyle.Font.Size = legendFont
		l.ThumbnailWidth = vg.Points(22)
		l.Padding = vg.Points(legendFont * 0.4)
		for _, e := range f.legend[k*per : min((k+1)*per, len(f.legend))] {
			l.Add(e.name, e.thumbs...)
		}
		r := l.Rectangle(draw.Canvas{})
		h = max(h, r.Max.Y-r.Min.Y)
		ls = append(ls, &l)
	}
	return ls, h + vg.Points(14)
}

func (f *Figure) write(path, ext string) error {
	ls, lh := f.legends()
	h := plotHight + lh
	var c vg.CanvasWriterTo
	switch ext {
	case "png":
		c = fastPNG{vgimg.NewWith(vgimg.UseWH(figWidth, h), vgimg.UseDPI(pngDPI))}
	case "svg":
		c = vgsvg.New(figWidth, h)
	default:
		return fmt.Errorf("unknown format %q", ext)
	}
	dc := draw.New(c)
	dc.FillPolygon(color.White, []vg.Point{{X: 0, Y: 0}, {X: figWidth, Y: 0}, {X: figWidth, Y: h}, {X: 0, Y: h}})
	pc := dc
	pc.Min.Y = lh
	// gonum centres a y label at the linear midpoint of the data range,
	// which on a log axis lands near the top and squeezes the plot; the
	// label is drawn here instead, in a margin of its own.
	ylabel := f.P.Y.Label.Text
	f.P.Y.Label.Text = ""
	defer func() { f.P.Y.Label.Text = ylabel }()
	if ylabel != "" {
		sty := f.P.Y.Label.TextStyle
		sty.Rotation = math.Pi / 2
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		lw := f.P.Y.Label.TextStyle.Height(ylabel) + vg.Points(10)
		top := pc.Max.Y - f.P.Title.TextStyle.Rectangle(f.P.Title.Text).Size().Y - f.P.Title.Padding
		dc.FillText(sty, vg.Point{X: pc.Min.X + lw/2 - vg.Points(1), Y: (pc.Min.Y + top) / 2}, ylabel)
		pc.Min.X += lw
	}
	f.P.Draw(pc)
	colW := (figWidth - vg.Points(36)) / vg.Length(max(1, len(ls)))
	for k, l := range ls {
		lc := dc
		lc.Min = vg.Point{X: vg.Points(28) + vg.Length(k)*colW, Y: vg.Points(4)}
		lc.Max = vg.Point{X: lc.Min.X + colW, Y: lh - vg.Points(6)}
		l.Draw(lc)
	}
	return results.WriteFile(path, func(w io.Writer) error {
		_, err := c.WriteTo(w)
		return err
	})
}

// fastPNG writes its image with the fastest deflate: plots are flat
// colour and compress well anyway, and drawing stays quick in tests.
type fastPNG struct{ *vgimg.Canvas }

func (c fastPNG) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	err := enc.Encode(cw, c.Image())
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// hline adds a horizontal line at y (a line rate, a ceiling) across the
// x range.
func (f *Figure) HLine(y float64, name string) error {
	ref := plotter.NewFunction(func(float64) float64 { return y })
	ref.Color = color.Gray{0x55}
	ref.Width = vg.Points(1.2)
	ref.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
	f.P.Add(ref)
	f.ymin, f.ymax = math.Min(f.ymin, y), math.Max(f.ymax, y)
	f.AddLegend(name, ref)
	return nil
}

// fileBase returns DIR/plots/name, creating DIR/plots.
func fileBase(dir, name string) (string, error) {
	pd := filepath.Join(dir, analysis.PlotsDir)
	if err := os.MkdirAll(pd, 0o755); err != nil {
		return "", fmt.Errorf("plots: %w", err)
	}
	return filepath.Join(pd, name), nil
}

// Slug turns a label into a file-name part.
func Slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}

// StreamTicks labels whole stream numbers only, at most about ten.
type StreamTicks struct{}

func (StreamTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := math.Ceil(min), math.Floor(max)
	step := math.Max(1, math.Ceil((hi-lo+1)/10))
	var ticks []plot.Tick
	for v := lo; v <= hi; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("%d", int(v))})
	}
	return ticks
}

// refLine draws a curve of the reference's figures in series colour i,
// dotted with hollow markers so that it reads as not kvtier's, and marks
// the figure as holding a reference.
func (f *Figure) RefLine(xys plotter.XYs, i int, name string) error {
	if len(xys) == 0 {
		return nil
	}
	c, _ := Style(i)
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(1.1), []vg.Length{vg.Points(1.5), vg.Points(2)}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.6), Shape: draw.RingGlyph{}}
	f.P.Add(l, s)
	f.Extend(xys)
	f.AddLegend(name, l, s)
	f.Reference = true
	return nil
}

// cellLabels writes each label centred on its cell, white on dark cells.
func (f *Figure) CellLabels(labels plotter.XYLabels, dark []bool) error {
	if len(labels.XYs) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
		l.TextStyle[i].Font.Size = vg.Points(8)
		l.TextStyle[i].Color = color.Gray{0x20}
		if dark[i] {
			l.TextStyle[i].Color = color.White
		}
	}
	f.P.Add(l)
	return nil
}

// legendSwatch adds a legend entry with a filled square of c.
func (f *Figure) LegendSwatch(c color.Color, name string) {
	poly, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 0}, {X: 1, Y: 1}, {X: 0, Y: 1}})
	if err != nil {
		return
	}
	poly.Color, poly.LineStyle.Width = c, 0
	f.AddLegend(name, poly)
}
