package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// Options say where a report is written.
type Options struct {
	// Base is the directory the report is written into: its links to
	// figure files are relative to it. "" links them as the runs' Dir
	// say.
	Base string
	// Home is the user's home directory: the report, meant to be shared,
	// writes it as ~ wherever a path holds it. "" leaves paths as they are.
	Home string
}

// A part is a piece of the report: its Markdown, then the figures shown
// after it. The figure index is written per format (index).
type part struct {
	md      string
	figures []analysis.Figure
	index   bool
}

// placed is a figure with the section it is shown in.
type placed struct {
	analysis.Figure
	section string
}

// A layout is the whole report: its parts in order and every figure with
// its section, for the index.
type layout struct {
	parts   []part
	figures []placed
}

// closings are the parts of the report that read the rows of more than
// one suite, written after every suite's sections, in the order
// registered.
var closings []func(io.Writer, []*analysis.Run)

// RegisterClosing adds a part written after every suite's sections and
// before the suites not run: one that reads the rows of several suites
// (the probe's hits predicted from the sweep's fetches). It is called
// from init functions.
func RegisterClosing(write func(w io.Writer, runs []*analysis.Run)) {
	closings = append(closings, write)
}

// Write renders the report of runs as Markdown, as Markdown does with
// links relative to the current directory.
func Write(w io.Writer, runs []*analysis.Run) { Markdown(w, runs, Options{}) }

// Markdown renders the report of runs as Markdown: a title, the headline
// (each suite's answer in a table or a line, labelled, linking to its
// section), the environment said once, one section per suite with its
// figures linked, the predictions, the suites not run and an index of
// every figure.
func Markdown(w io.Writer, runs []*analysis.Run, o Options) {
	l := layOut(runs)
	l.hideHome(o.Home)
	for _, p := range l.parts {
		io.WriteString(w, p.md)
		if len(p.figures) > 0 {
			var links []string
			for _, f := range p.figures {
				links = append(links, fmt.Sprintf("[%s](%s)", f.Title, o.link(f.File("png"))))
			}
			fmt.Fprintf(w, "Figures: %s.\n\n", strings.Join(links, " · "))
		}
		if p.index {
			writeIndex(w, l.figures, func(f analysis.Figure) string { return o.link(f.File("png")) })
		}
	}
}

// link returns path relative to the report's directory, with slashes.
func (o Options) link(path string) string {
	if o.Base != "" {
		if rel, err := filepath.Rel(o.Base, path); err == nil {
			path = rel
		}
	}
	return filepath.ToSlash(path)
}

// hideHome writes the home directory home as ~ in every part: a
// report is shared, and the reader needs neither the user's name nor
// where their files are (cuBLAS's search paths, --out of a command).
func (l *layout) hideHome(home string) {
	home = strings.TrimSuffix(home, "/")
	if home == "" {
		return
	}
	for i := range l.parts {
		l.parts[i].md = tildeHome(l.parts[i].md, home)
	}
}

// tildeHome replaces home in s by ~ where it is a whole path element:
// followed by a slash or by no further path character.
func tildeHome(s, home string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, home)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		rest := s[i+len(home):]
		if rest == "" || !strings.ContainsAny(rest[:1], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") {
			b.WriteString(s[:i] + "~")
		} else {
			b.WriteString(s[:i+len(home)])
		}
		s = rest
	}
}

// layOut builds the report's parts from runs.
func layOut(runs []*analysis.Run) layout {
	var l layout
	var b strings.Builder
	fmt.Fprintln(&b, "# kvtier report")
	fmt.Fprintln(&b)
	var dirs []string
	for _, r := range runs {
		dirs = append(dirs, "`"+r.Dir+"`")
	}
	fmt.Fprintf(&b, "Results: %s. Every figure says what it is: %s (on a GPU or a NIC), %s (the CPU standing in for a GPU), %s (kvtier sim standing in for vLLM) or %s (a model's, not a measurement). Times are p50 over the ok samples with the p10–p90 spread; rows that were skipped or failed are counted with their reasons, never as numbers.\n\n",
		strings.Join(dirs, ", "), analysis.Measured, analysis.StandIn, analysis.Simulated, analysis.Predicted)
	writeHeadline(&b, runs)
	writeEnvironment(&b, runs)
	l.add(&b, nil)
	var missing []string
	for _, suite := range results.Suites() {
		with := runsWith(runs, suite)
		if len(with) == 0 {
			missing = append(missing, fmt.Sprintf("%s (%s)", suite.Title, suite.Main().Name))
			continue
		}
		l.suite(runs, with, suite)
	}
	for _, write := range closings {
		write(&b, runs)
	}
	if len(missing) > 0 {
		fmt.Fprintln(&b, "## Not in these results")
		fmt.Fprintln(&b)
		for _, m := range missing {
			fmt.Fprintf(&b, "- %s: suite not run (no file in %s).\n", m, strings.Join(dirs, ", "))
		}
		fmt.Fprintln(&b)
	}
	if len(l.figures) > 0 {
		fmt.Fprintln(&b, "## Figures")
		fmt.Fprintln(&b)
	}
	l.add(&b, nil)
	l.parts[len(l.parts)-1].index = len(l.figures) > 0
	return l
}

// add ends a part with what b holds and the figures shown after it.
func (l *layout) add(b *strings.Builder, figs []placed) {
	p := part{md: b.String()}
	for _, f := range figs {
		p.figures = append(p.figures, f.Figure)
	}
	l.parts = append(l.parts, p)
	l.figures = append(l.figures, figs...)
	b.Reset()
}

// suite adds the sections of one suite: each under its heading, with what
// its figures are, from every run that holds the suite, and each run's
// figures after its part of the section they belong to (a store sweep's
// figures beside its own table, not after another run's).
func (l *layout) suite(runs, with []*analysis.Run, suite results.Suite) {
	secs := sectionsOf(suite)
	var b strings.Builder
	for i, sec := range secs {
		fmt.Fprintf(&b, "## %s\n\n", sec.title)
		if i == 0 {
			fmt.Fprintf(&b, "What these figures are: %s.\n\n", analysis.KindNote(analysis.SuiteKinds(runs, suite)))
		}
		for _, r := range with {
			if len(with) > 1 {
				fmt.Fprintf(&b, "### from `%s`\n\n", r.Dir)
			}
			sec.write(&b, r)
			l.add(&b, figuresIn(r, suite, secs, i))
		}
	}
}

// figuresIn returns the figures of run r that section i of the suite's
// sections shows: those whose name starts with its prefix, and those
// of no section's prefix in the last.
func figuresIn(r *analysis.Run, suite results.Suite, secs []titled, i int) []placed {
	var figs []placed
	for _, f := range r.Figures {
		if f.Suite != suite.Name {
			continue
		}
		j := len(secs) - 1
		for k, s := range secs {
			if s.figures != "" && strings.HasPrefix(f.Name, s.figures) {
				j = k
				break
			}
		}
		if j == i {
			figs = append(figs, placed{f, secs[i].title})
		}
	}
	return figs
}

// runsWith returns the runs that hold rows of any file of suite; of
// those, the runs of the suite itself (their manifest names it) when
// there are any: kvtier plan writes the trace's files again beside its
// own, and they are the trace run's.
func runsWith(runs []*analysis.Run, suite results.Suite) []*analysis.Run {
	var with, own []*analysis.Run
	for _, r := range runs {
		for _, f := range suite.Files {
			if len(r.Files[f.Name]) > 0 {
				with = append(with, r)
				if r.Manifest != nil && r.Manifest.Suite == suite.Name {
					own = append(own, r)
				}
				break
			}
		}
	}
	if len(own) > 0 {
		return own
	}
	return with
}

// writeIndex lists every figure: its title linking to it, the section it
// is shown in, and what its figures are.
func writeIndex(w io.Writer, figs []placed, link func(analysis.Figure) string) {
	t := NewTable("figure", "section", "what it shows", "file")
	t.Hoist = false
	for _, f := range figs {
		t.Add(fmt.Sprintf("[%s](%s)", f.Title, link(f.Figure)), fmt.Sprintf("[%s](#%s)", f.section, anchor(f.section)),
			analysis.KindLabel(f.Kinds), "`"+f.Name+"`")
	}
	t.Write(w)
}

// anchor returns the id GitHub and REPORT.html give a heading: lower
// case, letters, digits, '-' and '_' kept, spaces turned into '-', the
// rest dropped.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
