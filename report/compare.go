package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchmath"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// A Change is the difference between two runs in one configuration: the
// p50 of each and whether the samples differ by a Mann-Whitney U test at
// alpha 0.05, as benchstat decides it.
type Change struct {
	Suite  string
	Config string
	Metric string        // "time" or "penalty"
	Old    analysis.Dist // N == 0 when the configuration is only in the new run
	New    analysis.Dist
	P      float64 // p-value; NaN when one side is missing
	// Delta is the change of the p50 in percent ("+98.2%"), "~" when the
	// test does not tell the samples apart, "" when a side is missing.
	Delta string
	// Significant is true when the test rejects "same distribution".
	Significant bool
	Note        string // too few samples, a side missing, ...
}

// A compareSpec is how one suite's configurations are compared: the
// file's match columns name a configuration, its measurement is the
// value.
type compareSpec struct {
	suite string
	file  results.File
}

func (sp compareSpec) key(x results.Row) string {
	var parts []string
	for _, c := range sp.file.MatchColumns() {
		v := x.Cell(c)
		switch {
		case v == "":
			continue
		case c == results.ColPrefixTokens:
			v = "L=" + FmtTokens(x.PrefixTokens)
		case c == results.ColBytes:
			v = FmtBytes(float64(x.Bytes))
		case c == results.ColSimulated:
			if v != "true" {
				continue
			}
			v = "(simulated)"
		case c == results.ColDecodeStreams:
			v = "D=" + v
		case c == results.ColPrefillTokens:
			v = "P=" + v
		}
		parts = append(parts, v)
	}
	return strings.Join(parts, " ")
}

// compareSpecs returns one spec per registered suite whose main file
// names a measurement.
func compareSpecs() []compareSpec {
	var out []compareSpec
	for _, s := range results.Suites() {
		if f := s.Main(); f.Metric != "" {
			out = append(out, compareSpec{s.Name, f})
		}
	}
	return out
}

// Compare returns the change of every configuration found in either run,
// suite by suite.
func Compare(old, new *analysis.Run) []Change {
	var out []Change
	for _, sp := range compareSpecs() {
		ov, nv := samples(sp, old), samples(sp, new)
		var keys []string
		for k := range ov.vals {
			keys = append(keys, k)
		}
		for k := range nv.vals {
			if _, dup := ov.vals[k]; !dup {
				keys = append(keys, k)
			}
		}
		// Old run's order first, then what only the new run has.
		pos := func(k string) int {
			if i, ok := ov.order[k]; ok {
				return i
			}
			return len(ov.order) + nv.order[k]
		}
		slices.SortFunc(keys, func(a, b string) int {
			return cmp.Or(cmp.Compare(pos(a), pos(b)), strings.Compare(a, b))
		})
		for _, k := range keys {
			out = append(out, change(sp, k, ov.vals[k], nv.vals[k]))
		}
	}
	return out
}

type sampleSet struct {
	vals  map[string][]float64
	order map[string]int
}

func samples(sp compareSpec, r *analysis.Run) sampleSet {
	s := sampleSet{vals: map[string][]float64{}, order: map[string]int{}}
	for _, x := range r.Rows(sp.suite) {
		k := sp.key(x)
		if _, seen := s.order[k]; !seen {
			s.order[k] = len(s.order)
			s.vals[k] = nil
		}
		if v, good := sp.file.Measure(x); good {
			s.vals[k] = append(s.vals[k], v)
		}
	}
	for k := range s.vals {
		if len(s.vals[k]) == 0 {
			delete(s.vals, k) // nothing measured: not comparable
		}
	}
	return s
}

func change(sp compareSpec, key string, o, n []float64) Change {
	c := Change{Suite: sp.suite, Config: key, Metric: sp.file.Metric, Old: analysis.Summarize(o), New: analysis.Summarize(n), P: math.NaN()}
	switch {
	case len(o) == 0:
		c.Note = "only in new"
		return c
	case len(n) == 0:
		c.Note = "only in old"
		return c
	}
	th := &benchmath.DefaultThresholds
	so := benchmath.NewSample(slices.Clone(o), th)
	sn := benchmath.NewSample(slices.Clone(n), th)
	cmpr := benchmath.AssumeNothing.Compare(so, sn)
	c.P = cmpr.P
	c.Significant = cmpr.P <= cmpr.Alpha
	c.Delta = cmpr.FormatDelta(c.Old.P50, c.New.P50)
	var notes []string
	for _, w := range cmpr.Warnings {
		notes = append(notes, w.Error())
	}
	if len(notes) > 0 {
		c.Note = "too few samples to tell: " + strings.Join(notes, "; ")
	}
	return c
}

// WriteComparison prints changes as an aligned table, one section per
// suite, and a line counting the significant changes.
func WriteComparison(w io.Writer, oldName, newName string, changes []Change) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	suite := ""
	Sig := 0
	for _, c := range changes {
		if c.Suite != suite {
			if suite != "" {
				fmt.Fprintln(tw)
			}
			suite = c.Suite
			fmt.Fprintf(tw, "%s (%s p50)\told\tnew\tchange\tp\tn\tnote\n", c.Suite, c.Metric)
		}
		fmtv := FmtSec
		if c.Metric == "penalty" {
			fmtv = func(x float64) string { return sig3x(x) }
		}
		ov, nv := Dash, Dash
		if c.Old.N > 0 {
			ov = fmtv(c.Old.P50)
		}
		if c.New.N > 0 {
			nv = fmtv(c.New.P50)
		}
		p := Dash
		if !math.IsNaN(c.P) {
			p = fmt.Sprintf("%.3f", c.P)
		}
		delta := OrDash(c.Delta)
		if c.Significant {
			Sig++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d+%d\t%s\n", c.Config, ov, nv, delta, p, c.Old.N, c.New.N, c.Note)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nold: %s\nnew: %s\n%d of %d configurations changed significantly (Mann-Whitney U, alpha 0.05; ~ = no significant change).\n",
		oldName, newName, Sig, len(changes))
}

func sig3x(x float64) string { return Sig(x) + "×" }
