package results

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/registry"
)

// A Suite declares what one kvtier suite writes into a results directory.
// Each suite's package declares its Suite once and registers it from an
// init function; the run lifecycle, the summaries and the readers
// (report, plot, compare) iterate over the registered suites, so a new
// suite needs no edits in them.
type Suite struct {
	Name    string // the suite column and manifest.json's suite, e.g. "sweep"
	Title   string // heading of the suite's report section, e.g. "Device tiers"
	Command string // the command that runs it, e.g. "kvtier sweep"
	Order   int    // report order, ascending
	Files   []File // the first is the suite's main sample file
	// Figures are drawn by package plots from the declared columns (see
	// Figure), beside any a drawer registered with plots draws.
	Figures []Figure
}

// A File is one CSV file of a suite.
type File struct {
	Name string // e.g. "sweep.csv"
	// Columns follow CommonSchema in a sample file; in a Raw file they
	// are the whole header. Each is declared once, with its type, unit
	// and meaning (docs/columns.md is generated from them).
	Columns []Column
	// Raw marks a file that does not hold sample rows (a per-token time
	// series): no common columns, no summary, nothing to compare.
	Raw bool
	// Keys are the columns a configuration is told apart by: the summary
	// (NAME_summary.csv) groups by them and compare matches on them. Nil
	// writes no summary.
	Keys []string
	// Match are the columns compare matches a configuration on across
	// two runs (Keys when nil): not those that differ from run to run for
	// the same configuration, such as an ephemeral endpoint.
	Match []string
	// Metric names the measurement compare reports ("time", "TTFT",
	// "penalty"); Value is the column holding it, "seconds" when empty.
	Metric, Value string
	// Counts says whether an ok row's value is a measurement to compare
	// (a probe row whose hit was not verified is not); nil counts every
	// ok row with a finite value.
	Counts func(Row) bool
}

// Header returns the names of the file's whole header.
func (f File) Header() []string { return Names(f.Schema()) }

// Names returns the names of the file's own columns (those after the
// common ones in a sample file).
func (f File) Names() []string { return Names(f.Columns) }

// Schema returns the file's whole header, declared.
func (f File) Schema() []Column {
	if f.Raw {
		return slices.Clone(f.Columns)
	}
	return append(slices.Clone(CommonSchema), f.Columns...)
}

// Column returns the declaration of the file's column called name.
func (f File) Column(name string) (Column, bool) {
	for _, c := range f.Schema() {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// Measure returns the row's value of the file's measurement and whether
// it counts as one: an ok row with a finite value that Counts accepts.
func (f File) Measure(r Row) (float64, bool) {
	if r.Status != StatusOK {
		return math.NaN(), false
	}
	v := r.Seconds
	if f.Value != "" && f.Value != ColSeconds {
		v = r.Float(f.Value)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v, false
	}
	if f.Counts != nil && !f.Counts(r) {
		return v, false
	}
	return v, true
}

// MatchColumns returns the columns compare matches on.
func (f File) MatchColumns() []string {
	if f.Match != nil {
		return f.Match
	}
	return f.Keys
}

var suites = registry.New("suite", func(s Suite) string { return s.Name },
	func(a, b Suite) int { return cmp.Compare(a.Order, b.Order) })

// RegisterSuite adds a suite; it is called from init functions. A suite
// registered twice, a file name two suites claim, or a suite whose first
// file is not a sample file is a programming error and panics.
func RegisterSuite(s Suite) {
	if len(s.Files) == 0 || s.Files[0].Raw {
		panic("results: suite " + s.Name + " declares no sample file first")
	}
	for _, other := range suites.All() {
		for _, f := range s.Files {
			if _, ok := other.File(f.Name); ok {
				panic(fmt.Sprintf("results: suites %s and %s both declare %s", other.Name, s.Name, f.Name))
			}
		}
	}
	suites.Add(s)
}

// Suites returns every registered suite in report order.
func Suites() []Suite { return suites.All() }

// LookupSuite returns the suite registered as name.
func LookupSuite(name string) (Suite, bool) { return suites.Lookup(name) }

// File returns the suite's file called name.
func (s Suite) File(name string) (File, bool) {
	for _, f := range s.Files {
		if f.Name == name {
			return f, true
		}
	}
	return File{}, false
}

// Main returns the suite's main sample file.
func (s Suite) Main() File { return s.Files[0] }

// SummaryPath is the path of the summary of the results CSV at path:
// NAME.csv's is NAME_summary.csv.
func SummaryPath(path string) string {
	return strings.TrimSuffix(path, ".csv") + "_summary.csv"
}
