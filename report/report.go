package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// A Section renders a suite's rows (or a model fitted to them) as
// Markdown under its own heading.
type Section struct {
	Suite string // the registered suite whose rows it reads
	Title string // "" takes the suite's title
	Write func(w io.Writer, r *analysis.Run)
	// Figures is the name prefix of the suite's figures shown after this
	// section; the figures no section claims follow the suite's last.
	Figures string
}

// sections are the sections with more to say than a suite's summary, in
// the order they follow each other within their suite.
var sections []Section

// RegisterSection adds a section for a suite; it is called from init
// functions of the files that render them. A suite without one gets its
// summary table.
func RegisterSection(s Section) { sections = append(sections, s) }

// a section with its title resolved.
type titled struct {
	title   string
	write   func(io.Writer, *analysis.Run)
	figures string
}

// sectionsOf returns the sections of suite, or its summary table when it
// has none.
func sectionsOf(suite results.Suite) []titled {
	var out []titled
	for _, s := range sections {
		if s.Suite == suite.Name {
			t := s.Title
			if t == "" {
				t = suite.Title
			}
			out = append(out, titled{t, s.Write, s.Figures})
		}
	}
	if len(out) == 0 {
		out = append(out, titled{suite.Title, func(w io.Writer, r *analysis.Run) { writeSummary(w, suite, r) }, ""})
	}
	return out
}

// writeSummary is the section of a suite without one of its own: per
// configuration (the summary keys) n and the p50 and spread of its
// measurement.
func writeSummary(w io.Writer, suite results.Suite, r *analysis.Run) {
	f := suite.Main()
	cols := f.MatchColumns()
	keys, groups := analysis.GroupBy(r.Rows(suite.Name), func(x results.Row) string {
		return strings.Join(cellsOf(x, cols), "\x00")
	}, compareCells)
	metric := cmp.Or(f.Metric, "seconds")
	t := NewTable(append(append([]string{}, cols...), "n", metric+" p50", "p10–p90")...)
	for _, k := range keys {
		var xs []float64
		for _, x := range groups[k] {
			if v, ok := f.Measure(x); ok {
				xs = append(xs, v)
			}
		}
		d := analysis.Summarize(xs)
		cells := append(cellsOf(groups[k][0], cols), fmt.Sprint(d.N), Sig(d.P50), FmtRange(d.P10, d.P90, Sig))
		t.Add(cells...)
	}
	t.Write(w)
	fmt.Fprintln(w)
}

// compareCells orders two keys of cells joined by NUL column by column:
// numbers by value (256 before 1024), other cells as text, numbers
// before text.
func compareCells(a, b string) int {
	as, bs := strings.Split(a, "\x00"), strings.Split(b, "\x00")
	for i := range min(len(as), len(bs)) {
		x, errx := strconv.ParseFloat(as[i], 64)
		y, erry := strconv.ParseFloat(bs[i], 64)
		c := strings.Compare(as[i], bs[i])
		switch {
		case errx == nil && erry == nil:
			c = cmp.Or(cmp.Compare(x, y), c)
		case errx == nil:
			c = -1 // a number before text
		case erry == nil:
			c = 1
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(as), len(bs))
}

// cellsOf returns x's cells of cols.
func cellsOf(x results.Row, cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = x.Cell(c)
	}
	return out
}

// joinWhere lists places, saying a shared "L=" once: "L=1k, 2k, 4k".
func joinWhere(ws []string) string {
	all := true
	for _, x := range ws {
		all = all && strings.HasPrefix(x, "L=")
	}
	if !all {
		return strings.Join(ws, ", ")
	}
	out := slices.Clone(ws)
	for i := 1; i < len(out); i++ {
		out[i] = strings.TrimPrefix(out[i], "L=")
	}
	return strings.Join(out, ", ")
}

// OrDash returns s, or Dash when s is blank.
func OrDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return Dash
	}
	return s
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// Gaps collects the rows that hold no measurement, by status and reason,
// and under each the configurations and where (L, size) they were.
type Gaps struct {
	keys  []gapKey
	n     map[gapKey]int
	cfgs  map[gapKey][]string
	where map[gapKey]map[string][]string
}

type gapKey struct{ status, reason string }

// Add records the not-ok rows of one cell: configuration cfg at where.
func (g *Gaps) Add(cfg, where string, rows []results.Row) {
	if g.n == nil {
		g.n, g.cfgs, g.where = map[gapKey]int{}, map[gapKey][]string{}, map[gapKey]map[string][]string{}
	}
	for _, r := range rows {
		if r.Status == results.StatusOK {
			continue
		}
		k := gapKey{string(r.Status), analysis.ReasonOf(r)}
		if _, seen := g.n[k]; !seen {
			g.keys = append(g.keys, k)
			g.where[k] = map[string][]string{}
		}
		g.n[k]++
		if _, seen := g.where[k][cfg]; !seen {
			g.cfgs[k] = append(g.cfgs[k], cfg)
		}
		if where != "" && !slices.Contains(g.where[k][cfg], where) {
			g.where[k][cfg] = append(g.where[k][cfg], where)
		}
	}
}

// Write prints one item per status and reason with the configurations it
// hit, so that a reason shared by many cells is said once.
func (g *Gaps) Write(w io.Writer, what string) {
	if len(g.keys) == 0 {
		return
	}
	fmt.Fprintf(w, "Not measured (%s), by reason:\n\n", what)
	for _, k := range g.keys {
		fmt.Fprintf(w, "- %d %s: %s\n", g.n[k], k.status, k.reason)
		for _, c := range g.cfgs[k] {
			if ws := g.where[k][c]; len(ws) > 0 {
				fmt.Fprintf(w, "  - %s at %s\n", c, joinWhere(ws))
			} else {
				fmt.Fprintf(w, "  - %s\n", c)
			}
		}
	}
	fmt.Fprintln(w)
}
