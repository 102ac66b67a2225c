package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// A Headline is a suite's answer in the report's first screen: one line
// of Markdown and, where the answer is a table, the table. The report
// puts the suite's title before it, what its figures are (KindsOf its
// rows) and a link to the suite's section; a suite without a Headline
// gets a line from its declaration (SummaryLine).
type Headline struct {
	Suite string
	// Write returns the answer of the runs' rows of the suite; "" and ""
	// when they hold nothing to say.
	Write func(runs []*analysis.Run) (line, table string)
}

var headlines = map[string]Headline{}

// RegisterHeadline sets the headline of a suite; it is called from init
// functions of the files that render it.
func RegisterHeadline(h Headline) { headlines[h.Suite] = h }

// writeHeadline writes the headline: every suite the runs hold, in
// report order, tables as captioned tables and the rest as one list.
func writeHeadline(w io.Writer, runs []*analysis.Run) {
	Paragraph(w, "## Headline")
	inList := false
	for _, suite := range results.Suites() {
		with := runsWith(runs, suite)
		if len(with) == 0 {
			continue
		}
		var line, tbl string
		if h, ok := headlines[suite.Name]; ok {
			line, tbl = h.Write(with)
		} else {
			line = SummaryLine(with, suite)
		}
		if line == "" && tbl == "" {
			continue
		}
		lead := fmt.Sprintf("**%s** (%s; [details](#%s))", suite.Title, analysis.KindLabel(analysis.SuiteKinds(with, suite)), anchor(sectionsOf(suite)[0].title))
		if tbl == "" {
			fmt.Fprintf(w, "- %s: %s\n", lead, line)
			inList = true
			continue
		}
		if inList {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %s\n\n%s", lead, line, tbl)
		inList = false
	}
	if inList {
		fmt.Fprintln(w)
	}
}

// AllRows returns the rows of suite's main file across runs.
func AllRows(runs []*analysis.Run, suite string) []results.Row {
	var rows []results.Row
	for _, r := range runs {
		rows = append(rows, r.Rows(suite)...)
	}
	return rows
}

// SummaryLine is the headline of a suite without one of its own, from
// its declaration: how many configurations its main file holds and the
// range of their p50s, or how many rows.
func SummaryLine(runs []*analysis.Run, suite results.Suite) string {
	f := suite.Main()
	rows := AllRows(runs, suite.Name)
	counts := StatusCounts(rows)
	if f.Keys == nil || len(rows) == 0 {
		return counts
	}
	cols := f.MatchColumns()
	keys, groups := analysis.GroupBy(rows, func(x results.Row) string { return strings.Join(cellsOf(x, cols), ", ") }, strings.Compare)
	lo, hi := math.Inf(1), math.Inf(-1)
	var loK, hiK string
	for _, k := range keys {
		var xs []float64
		for _, x := range groups[k] {
			if v, ok := f.Measure(x); ok {
				xs = append(xs, v)
			}
		}
		if d := analysis.Summarize(xs); d.N > 0 {
			if d.P50 < lo {
				lo, loK = d.P50, k
			}
			if d.P50 > hi {
				hi, hiK = d.P50, k
			}
		}
	}
	if math.IsInf(lo, 1) {
		return fmt.Sprintf("%d configurations, none with a measurement; %s", len(keys), counts)
	}
	val := Sig
	if v := cmp.Or(f.Value, results.ColSeconds); v == results.ColSeconds || strings.HasSuffix(v, "_s") {
		val = FmtSec
	}
	return fmt.Sprintf("%d configurations; %s p50 from %s (%s) to %s (%s); %s", len(keys), cmp.Or(f.Metric, "seconds"),
		val(lo), loK, val(hi), hiK, counts)
}

// StatusCounts says how many rows are ok, skipped and errors.
func StatusCounts(rows []results.Row) string {
	n := map[results.Status]int{}
	for _, r := range rows {
		n[r.Status]++
	}
	s := fmt.Sprintf("%d ok rows", n[results.StatusOK])
	for _, st := range []results.Status{results.StatusSkipped, results.StatusError} {
		if n[st] > 0 {
			s += fmt.Sprintf(", %d %s", n[st], st)
		}
	}
	return s
}

// HeadlineL are the prefix lengths of the headline's tables: the
// reference's.
var HeadlineL = []int64{8192, 16384, 32768, 65536}

// PickL returns the lengths of ls when they are four or fewer, else
// those of want that ls holds, else the largest four of ls.
func PickL(ls []int64, want []int64) []int64 {
	slices.Sort(ls)
	ls = slices.Compact(ls)
	if len(ls) <= 4 {
		return ls
	}
	var out []int64
	for _, l := range want {
		if slices.Contains(ls, l) {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		out = ls[len(ls)-4:]
	}
	return out
}

// ReasonAt returns the reason of the first not-ok row, "" when none.
func ReasonAt(rows []results.Row) string {
	for _, r := range rows {
		if r.Status != results.StatusOK {
			return fmt.Sprintf("%s: %s", r.Status, analysis.ReasonOf(r))
		}
	}
	return ""
}
