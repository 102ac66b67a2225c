package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kvtier/kvtier/harness/mb1"
	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/harness/transfer"
	"github.com/kvtier/kvtier/report/reporttest"
	"github.com/kvtier/kvtier/results"
)

func TestReportCommand(t *testing.T) {
	dir := reporttest.TempDir(t, reporttest.Options{Seed: 1})
	// Quiet by default: where it wrote on stderr, the headline on stdout
	// (before, the whole report went to stdout); --print prints it all.
	stdout, errOut := mustRunCLI(t, "report", dir)
	b, err := os.ReadFile(filepath.Join(dir, "REPORT.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout, "## Headline\n") || !strings.Contains(string(b), stdout) || strings.Contains(stdout, "## Environment") ||
		!strings.Contains(errOut, "wrote "+filepath.Join(dir, "REPORT.md")) {
		t.Errorf("stdout is not REPORT.md's headline alone:\n%s\nstderr %q", stdout, errOut)
	}
	if stdout, _ = mustRunCLI(t, "report", "--print", dir); stdout != string(b) || !strings.Contains(stdout, "## Device tiers") {
		t.Errorf("--print: REPORT.md and stdout differ or lack the tier table")
	}
	outDir := t.TempDir()
	out := filepath.Join(outDir, "REPORT.md")
	sweepOnly := reporttest.TempDir(t, reporttest.Options{Seed: 2, Suites: []string{sweep.File}})
	stdout, _ = mustRunCLI(t, "report", "--print", "--out", outDir, sweepOnly, dir)
	if _, err := os.Stat(out); err != nil {
		t.Errorf("--out not written: %v", err)
	}
	if !strings.Contains(stdout, "### from `"+sweepOnly+"`") {
		t.Errorf("two dirs: no per-dir section")
	}
	// A suite directory without CSV among others is left out with a warning.
	code, _, stderr := runCLI(t, "report", "--out", out, dir, t.TempDir())
	if code != exitOK || !strings.Contains(stderr, "no kvtier CSV") || !strings.Contains(stderr, "left out") {
		t.Errorf("dir without CSV among others: exit %d, stderr %q", code, stderr)
	}
}

func TestPlotCommand(t *testing.T) {
	dir := reporttest.TempDir(t, reporttest.Options{Seed: 1, Small: true, Suites: []string{sweep.File}})
	stdout, stderr := mustRunCLI(t, "plot", dir)
	if !strings.Contains(stdout, filepath.Join(dir, "plots", "sweep_tiers.png")) {
		t.Errorf("stdout does not list the tier plot:\n%s", stdout)
	}
	// Quiet about the suites that did not run unless asked (before, a
	// line for each of them on every run).
	if strings.Contains(stderr, "absent") {
		t.Errorf("without --verbose, stderr names suites that did not run:\n%s", stderr)
	}
	_, stderr = mustRunCLI(t, "plot", "--verbose", dir)
	for _, f := range []string{probe.File, mb1.File, transfer.File} {
		if !strings.Contains(stderr, f+" absent") {
			t.Errorf("--verbose: stderr does not say %s is absent:\n%s", f, stderr)
		}
	}
}

func TestCompareCommand(t *testing.T) {
	a := reporttest.TempDir(t, reporttest.Options{Seed: 100, Reps: 10, Suites: []string{sweep.File}})
	b := reporttest.TempDir(t, reporttest.Options{Seed: 101, Reps: 10, Suites: []string{sweep.File}, Slow: map[string]float64{"hbm": 2}})
	stdout, stderr := mustRunCLI(t, "compare", a, b)
	if !strings.Contains(stdout, "4 of 23 configurations changed significantly") {
		t.Errorf("compare output:\n%s", stdout)
	}
	if stderr != "" {
		t.Errorf("compare of two whole runs said %q", stderr)
	}
	// A malformed row is left out with a word, not silently.
	f, err := os.OpenFile(filepath.Join(b, sweep.File), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("sweep,not,a,row\n")
	f.Close()
	_, stderr = mustRunCLI(t, "compare", a, b)
	if !strings.Contains(stderr, b+": ") || !strings.Contains(stderr, "malformed") {
		t.Errorf("compare said %q about a malformed row of %s", stderr, b)
	}
}

func TestBench2CSVCommand(t *testing.T) {
	stdout, _ := mustRunCLI(t, "bench2csv", "testdata/bench2csv_in.txt")
	checkGoldenCSV(t, "bench2csv.golden", stdout)
	out := filepath.Join(t.TempDir(), "b.csv")
	mustRunCLI(t, "bench2csv", "--out", out, "testdata/bench2csv_in.txt")
	rows, _, err := results.ReadCSV(out)
	if err != nil || len(rows) != 3 {
		t.Errorf("--out file: %d rows, %v", len(rows), err)
	}
}

// TestAnalysisBadInput: every bad input is one line on stderr and exit 2.
func TestAnalysisBadInput(t *testing.T) {
	empty := t.TempDir()
	unreadable := t.TempDir()
	// A directory where the CSV should be: open succeeds, read fails, even
	// for root.
	os.Mkdir(filepath.Join(unreadable, sweep.File), 0o755)
	// A FIFO nobody writes to where the CSV should be: opening it to
	// read would wait forever.
	fifo := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifo, sweep.File), 0o644); err != nil {
		t.Fatal(err)
	}
	malformed := t.TempDir()
	os.WriteFile(filepath.Join(malformed, probe.File), []byte("suite,rep\nprobe,x\n"), 0o644)
	noBench := filepath.Join(t.TempDir(), "empty.txt")
	os.WriteFile(noBench, []byte("PASS\n"), 0o644)
	good := reporttest.TempDir(t, reporttest.Options{Seed: 1, Suites: []string{sweep.File}})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "kvtier report: need at least one results directory"},
		{[]string{"report", empty}, "no kvtier CSV"},
		{[]string{"report", empty, t.TempDir()}, "no kvtier CSV"},
		{[]string{"report", filepath.Join(empty, "missing")}, "no such file or directory"},
		{[]string{"report", unreadable}, "not a regular file"},
		{[]string{"report", fifo}, "not a regular file"},
		{[]string{"compare", good, fifo}, "not a regular file"},
		{[]string{"report", malformed}, "probe.csv"},
		{[]string{"report", "--out", filepath.Join(empty, "no", "dir", "r.md"), good}, "--out"},
		{[]string{"report", "--bogus", good}, "unknown flag"},
		{[]string{"plot"}, "kvtier plot: need at least one results directory"},
		{[]string{"plot", empty}, "no kvtier CSV"},
		{[]string{"plot", unreadable}, "not a regular file"},
		{[]string{"compare", good}, "need two results directories"},
		{[]string{"compare", good, good, good}, "want two directories, got 3"},
		{[]string{"compare", good, empty}, "no kvtier CSV"},
		{[]string{"bench2csv", filepath.Join(empty, "nope.txt")}, "no such file"},
		{[]string{"bench2csv", noBench}, "no benchmark results"},
		{[]string{"bench2csv", "a", "b"}, "want one input, got 2"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(t, tt.args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d", tt.args, code, exitUsage)
		}
		if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%q: stderr %q, want one line containing %q", tt.args, stderr, tt.want)
		}
		if stdout != "" {
			t.Errorf("%q: wrote to stdout: %q", tt.args, stdout)
		}
	}
}

// TestReportHTML: --html writes REPORT.html beside --out, the figures
// drawn into the directory inline, their PNG linked relative to it; a
// page that cannot be written is exit 1 after REPORT.md is written.
func TestReportHTML(t *testing.T) {
	dir := reporttest.TempDir(t, reporttest.Options{Seed: 1, Small: true, Suites: []string{sweep.File}})
	mustRunCLI(t, "plot", dir)
	out := filepath.Join(filepath.Dir(dir), "REPORT.md")
	_, stderr := mustRunCLI(t, "report", "--html", "--out", out, dir)
	page, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "REPORT.html"))
	if err != nil {
		t.Fatal(err)
	}
	rel := filepath.Base(dir) + "/plots/sweep_tiers.png"
	for _, want := range []string{"<h2 id=\"headline\">", "<svg ", `href="` + rel + `"`, "kvtier report: wrote " + out} {
		if !strings.Contains(string(page)+stderr, want) {
			t.Errorf("REPORT.html or stderr lacks %q", want)
		}
	}
	md, _ := os.ReadFile(out)
	if !strings.Contains(string(md), "]("+rel+")") {
		t.Errorf("REPORT.md does not link %s relative to itself", rel)
	}
	blocked := filepath.Join(t.TempDir(), "r.md")
	if err := os.Mkdir(strings.TrimSuffix(blocked, ".md")+".html", 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "report", "--html", "--out", blocked, dir)
	if _, err := os.Stat(blocked); code != exitFail || err != nil || !strings.Contains(stderr, "--html") {
		t.Errorf("unwritable page: exit %d (want %d), REPORT.md %v, stderr %q", code, exitFail, err, stderr)
	}
}
