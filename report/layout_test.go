package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/report/reporttest"
	"github.com/kvtier/kvtier/results"
)

// benchTree writes a results tree laid out as make bench lays it out (one
// directory per suite, each with its manifest), draws its plots when
// asked, and loads it. The drawn tree is drawn once for the tests that
// read it (drawing is the slow part under -race) and left alone by them.
func benchTree(t *testing.T, draw bool) (string, []*analysis.Run) {
	t.Helper()
	if draw {
		d := drawn()
		if d.err != nil {
			t.Fatal(d.err)
		}
		return d.root, d.runs
	}
	root, runs, err := writeTree(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	return root, runs
}

type tree struct {
	root string
	runs []*analysis.Run
	err  error
}

// drawn is the drawn tree, in a directory TestMain removes.
var drawn = sync.OnceValue(func() tree {
	root, err := os.MkdirTemp("", "kvtier-report-test-")
	if err != nil {
		return tree{err: err}
	}
	drawnRoot = root
	root, runs, err := writeTree(root, true)
	return tree{root, runs, err}
})

var drawnRoot string

func TestMain(m *testing.M) {
	code := m.Run()
	if drawnRoot != "" {
		os.RemoveAll(drawnRoot)
	}
	os.Exit(code)
}

func writeTree(root string, draw bool) (string, []*analysis.Run, error) {
	dirs, err := reporttest.WriteTree(root, reporttest.Options{Seed: 7, Reps: 3, Disk: true})
	if err != nil {
		return root, nil, err
	}
	var runs []*analysis.Run
	for _, d := range dirs {
		if draw {
			if _, err := plots.Draw(d); err != nil {
				return root, nil, err
			}
		}
		r, err := analysis.Load(d)
		if err != nil {
			return root, nil, err
		}
		runs = append(runs, r)
	}
	return root, runs, nil
}

func markdown(runs []*analysis.Run, base string) string {
	var b bytes.Buffer
	report.Markdown(&b, runs, report.Options{Base: base})
	return b.String()
}

// headings returns the text of every heading of level 2 and below with
// its anchor.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	for line := range strings.SplitSeq(md, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			out[anchorOf(h)] = true
		}
	}
	return out
}

// anchorOf is GitHub's heading id, written out again here so that the
// test does not trust the code it checks.
func anchorOf(h string) string {
	h = strings.ToLower(h)
	h = regexp.MustCompile(`[^\p{L}\p{N} _-]`).ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}

// TestHeadlineFirstScreen: the report opens with the headline, at most
// 40 lines before the second "##" heading, holding the tier table, the
// four-tier TTFT, MB1, MB2, the trace and the plan, each labelled and
// linking to a section that exists.
func TestHeadlineFirstScreen(t *testing.T) {
	t.Parallel()
	_, runs := benchTree(t, false)
	md := markdown(runs, "")
	lines := strings.Split(md, "\n")
	var h2 []int
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") {
			h2 = append(h2, i)
		}
	}
	if len(h2) < 2 || lines[h2[0]] != "## Headline" {
		t.Fatalf("the first ## heading is not the headline: at lines %v", h2)
	}
	if h2[1] > 40 {
		t.Errorf("%d lines before the second ## heading, want at most 40:\n%s", h2[1], strings.Join(lines[:h2[1]], "\n"))
	}
	head := strings.Join(lines[h2[0]:h2[1]], "\n")
	for _, want := range []string{
		"| L | hbm | host | remote | disk | recompute |", "| 16k |", "| 64k |", "| break-even |",
		"| L | miss | remote | cpu | gpu | miss/remote | remote/cpu | cpu/gpu | miss/cpu |",
		"D=8, P=32,768", "(control", "intra 9.", "inter 10.", "at 4 GiB", "at 1 GiB (blockwise): intra 8.", "inter 2",
		"disk: in italics, predicted by the tier's fitted cost model (measured at L 1k – 4k); not measured at 16k: skipped: the file would exceed", "| *1.", "APC ceiling 80.3 %", "the smallest configuration within 10 %",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("headline lacks %q:\n%s", want, head)
		}
	}
	have := anchors(md)
	leads := regexp.MustCompile(`\*\*([^*]+)\*\* \(([^;]+); \[details\]\(#([^)]+)\)\)`).FindAllStringSubmatch(head, -1)
	if len(leads) != 7 {
		t.Errorf("headline has %d labelled suites, want 7 (sweep, probe, mb1, transfer, mesh, trace, plan): %q", len(leads), leads)
	}
	kinds := regexp.MustCompile(`^(measured|host stand-in|simulated|predicted)(, (measured|host stand-in|simulated|predicted))*$`)
	for _, l := range leads {
		if !kinds.MatchString(l[2]) {
			t.Errorf("%s is labelled %q, not measured / host stand-in / simulated / predicted", l[1], l[2])
		}
		if !have[l[3]] {
			t.Errorf("%s links to #%s, which no heading has", l[1], l[3])
		}
	}
	checkCells(t, md)
}

// TestEnvironmentOnce: with one directory per suite, as make bench
// writes them, what every run shares is said once, each library that
// did not load on one line, and each run gets one row.
func TestEnvironmentOnce(t *testing.T) {
	t.Parallel()
	_, runs := benchTree(t, false)
	md := markdown(runs, "")
	for want, n := range map[string]int{
		"## Environment": 1, "gpu-node-7": 1, "Intel Xeon Platinum 8468": 1, "NVIDIA H200 [0000:19:00.0], 141 GiB": 1,
		"- verbs: libibverbs.so.1: cannot open shared object file": 1, "backend cuda": 1,
		"| `kvtier sweep --out": 1, "| `kvtier interfere --out": 1, "| `kvtier plan --out": 1,
	} {
		if got := strings.Count(md, want); got != n {
			t.Errorf("%q appears %d times, want %d", want, got, n)
		}
	}
}

// TestDetailTablesCompact: a label every row of a table would repeat is
// said once above it, and no cell of a section's tables repeats the
// section's heading or a label said above.
func TestDetailTablesCompact(t *testing.T) {
	t.Parallel()
	dir := reporttest.TempDir(t, reporttest.Options{Seed: 3, Small: true, Suites: []string{sweep.File}})
	// A host-only sweep: every row is the stand-in's.
	standIn := t.TempDir()
	if err := os.WriteFile(filepath.Join(standIn, sweep.File), filterCSV(t, filepath.Join(dir, sweep.File), ",host,memcpy,"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, tree := benchTree(t, false)
	for name, runs := range map[string][]*analysis.Run{"bench tree": tree, "stand-in sweep": {load(t, standIn)}} {
		md := markdown(runs, "")
		checkSections(t, name, md)
		if name == "stand-in sweep" {
			if n := strings.Count(md, "host stand-in (CPU DRAM), not a GPU"); n != 1 {
				t.Errorf("%s: the stand-in's label is written %d times, want once above the table", name, n)
			}
		}
	}
}

func load(t *testing.T, dir string) *analysis.Run {
	t.Helper()
	r, err := analysis.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// filterCSV returns the header and the lines of path containing sub.
func filterCSV(t *testing.T, path, sub string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	out := lines[0]
	for _, l := range lines[1:] {
		if strings.Contains(l, sub) {
			out += l
		}
	}
	return []byte(out)
}

// checkSections fails where a table cell holds its section's heading
// text, or a label the table's "In every row" line already says.
func checkSections(t *testing.T, name, md string) {
	t.Helper()
	var heading string
	var hoisted []string
	for i, line := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			heading = strings.TrimPrefix(line, "## ")
		case strings.HasPrefix(line, "In every row: "):
			hoisted = nil
			for kv := range strings.SplitSeq(strings.TrimSuffix(strings.TrimPrefix(line, "In every row: "), "."), "; ") {
				// Labels, not numbers: two columns may hold the same number.
				if _, v, ok := strings.Cut(kv, ": "); ok && regexp.MustCompile(`^\pL`).MatchString(v) {
					hoisted = append(hoisted, v)
				}
			}
		case line == "":
		case strings.HasPrefix(line, "|") && heading != "Headline" && heading != "Figures":
			for c := range strings.SplitSeq(strings.Trim(line, "|"), "|") {
				c = strings.TrimSpace(c)
				if strings.Contains(c, heading) || slices.Contains(hoisted, c) {
					t.Errorf("%s: line %d: cell %q repeats the heading %q or a label said above (%q)", name, i+1, c, heading, hoisted)
				}
			}
		case !strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "["):
			hoisted = nil // prose between tables ends what the line said
		}
	}
}

// TestFigureIndex: every figure drawn is in the index, once, with the
// section it is shown in; each section lists its figures.
func TestFigureIndex(t *testing.T) {
	t.Parallel()
	root, runs := benchTree(t, true)
	md := markdown(runs, root)
	if out := os.Getenv("KVTIER_REPORT_TREE"); out != "" { // a look by eye: go test -run FigureIndex (a directory that does not exist)
		os.CopyFS(out, os.DirFS(root))
		os.WriteFile(filepath.Join(out, "REPORT.md"), []byte(md), 0o644)
	}
	i := strings.Index(md, "\n## Figures\n")
	if i < 0 {
		t.Fatal("no ## Figures index")
	}
	index := md[i:]
	have := anchors(md)
	n := 0
	for _, r := range runs {
		for _, f := range r.Figures {
			n++
			png := filepath.ToSlash(filepath.Join(filepath.Base(r.Dir), "plots", f.Name+".png"))
			row := regexp.MustCompile(`(?m)^\| \[` + regexp.QuoteMeta(f.Title) + `\]\(` + regexp.QuoteMeta(png) + `\) \| \[[^]]+\]\(#([^)]+)\) \| ([^|]+) \|`).FindStringSubmatch(index)
			if row == nil {
				t.Errorf("figure %s (%s) is not in the index as a link to %s", f.Name, f.Title, png)
				continue
			}
			if !have[row[1]] {
				t.Errorf("figure %s: its section #%s has no heading", f.Name, row[1])
			}
			if strings.TrimSpace(row[2]) == "" || len(f.Kinds) == 0 {
				t.Errorf("figure %s: no label (measured / simulated / host stand-in / predicted)", f.Name)
			}
			if strings.Count(md, "]("+png+")") != 2 {
				t.Errorf("figure %s: linked %d times, want once in its section and once in the index", f.Name, strings.Count(md, "]("+png+")"))
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d figures drawn in the tree", n)
	}
}

// TestFiguresBesideTheirRun checks that, with two runs of one suite (make
// bench's load sweep and store sweep), each run's figures are linked
// under its own "from" heading, in every section, and not all after the
// last run's part (the store sweep's cost-model part linked the load
// sweep's figures).
func TestFiguresBesideTheirRun(t *testing.T) {
	t.Parallel()
	run := func(dir string, names ...string) *analysis.Run {
		r := results.NewRow(sweep.Suite.Name)
		r.Backend, r.Transport, r.Tier, r.Layout, r.Model = "host", "memcpy", "host", "layerwise", "m"
		r.PrefixTokens, r.Blocks, r.Bytes = 1024, 64, 64<<20
		r.SetTime(0.01)
		run := &analysis.Run{Dir: dir, Files: map[string][]results.Row{"sweep.csv": {r}}}
		for _, n := range names {
			run.Figures = append(run.Figures, analysis.Figure{Name: n, Suite: sweep.Suite.Name, Title: dir + " " + n,
				Files: []string{n + ".png"}, Dir: dir + "/plots"})
		}
		return run
	}
	var b bytes.Buffer
	report.Write(&b, []*analysis.Run{run("load", "sweep_tiers", "costmodel_host"), run("store", "sweep_tiers")})
	md, _, _ := strings.Cut(b.String(), "\n## Figures\n")
	from, links := "", 0
	for _, line := range strings.Split(md, "\n") {
		if s, ok := strings.CutPrefix(line, "### from `"); ok {
			from = strings.TrimSuffix(s, "`")
		}
		for _, m := range regexp.MustCompile(`\]\(([^)]+\.png)\)`).FindAllStringSubmatch(line, -1) {
			links++
			if !strings.HasPrefix(m[1], from+"/") {
				t.Errorf("figure %s linked under the part from %q", m[1], from)
			}
		}
	}
	if links != 3 {
		t.Errorf("%d figures linked in the sections, want 3:\n%s", links, md)
	}
}
