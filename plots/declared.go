package plots

import (
	"cmp"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// declared returns a drawer for each figure suite declares
// (results.Suite.Figures).
func declared(suite results.Suite) []Drawer {
	var ds []Drawer
	for _, fig := range suite.Figures {
		ds = append(ds, func(dir string, run *analysis.Run, res *Result) error {
			return drawDeclared(dir, run, res, suite, fig)
		})
	}
	return ds
}

// drawDeclared draws fig of suite: a line per configuration of its
// Series, the p50 of the file's measurement against its X column.
func drawDeclared(dir string, run *analysis.Run, res *Result, suite results.Suite, fig results.Figure) error {
	file := suite.Main()
	if fig.File != "" {
		file, _ = suite.File(fig.File)
	}
	keys, groups := analysis.GroupBy(run.Files[file.Name], func(r results.Row) string {
		var cells []string
		for _, c := range fig.Series {
			cells = append(cells, r.Get(c))
		}
		return strings.Join(cells, " / ")
	}, strings.Compare)
	x := func(r results.Row) float64 { return r.Float(fig.X) }
	ss := SeriesOf(keys, groups, func(k string) string { return k }, x, file.Measure)
	f, err := SeriesFigure(res, ss, file.Name+" has no ok rows: "+fig.Name+" not drawn",
		fig.Title, axisLabel(file, fig.X, fig.X), axisLabel(file, cmp.Or(file.Value, results.ColSeconds), cmp.Or(file.Metric, "time")))
	if f == nil || err != nil {
		return err
	}
	if fig.LogX {
		f.LogX(PlainLabel, true)
	}
	f.TicksAt(AllX(ss), PlainLabel)
	f.LinearY(PlainLabel)
	return Emit(dir, fig.Name, f, res)
}

// axisLabel names the axis of file's column col: name, and the unit the
// column is declared in.
func axisLabel(file results.File, col, name string) string {
	if c, ok := file.Column(col); ok && c.Unit != "" {
		return name + " (" + c.Unit + ")"
	}
	return name
}
