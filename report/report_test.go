package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/report/reporttest"
)

func render(t *testing.T, dirs ...string) string {
	t.Helper()
	var runs []*analysis.Run
	for _, d := range dirs {
		r, err := analysis.Load(d)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	var b bytes.Buffer
	report.Write(&b, runs)
	return b.String()
}

func TestReportFull(t *testing.T) {
	t.Parallel()
	md := render(t, reporttest.TempDir(t, reporttest.Options{Seed: 1, Suites: reporttest.Everything}))
	if p := os.Getenv("KVTIER_REPORT_OUT"); p != "" {
		os.WriteFile(p, []byte(md), 0o644)
	}
	for _, want := range []string{
		"## Environment", "gpu-node-7", "NVIDIA H200", "verbs: libibverbs.so.1: cannot open",
		"## Device tiers", "host stand-in (CPU DRAM), not a GPU",
		"## Tier cost model", "Break-even prefix",
		"## HTTP four-tier TTFT", "miss/remote", "unverified",
		"## MB1", "control penalty",
		"## MB2", "11.5 GiB p50",
		"## Predicted vs measured",
		"hbm tier needs a GPU backend", "connection reset", "no --producer", "no second GPU",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "Not in these results") {
		t.Errorf("full report says a suite is missing")
	}
	checkCells(t, md)
}

// checkCells fails on any empty or NaN cell of any Markdown table.
func checkCells(t *testing.T, md string) {
	t.Helper()
	for i, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.SplitSeq(strings.Trim(line, "|"), " | ")
		for c := range cells {
			c = strings.TrimSpace(c)
			if c == "" || strings.Contains(c, "NaN") || strings.Contains(c, "Inf") {
				t.Errorf("line %d has an empty or NaN cell: %s", i+1, line)
			}
		}
	}
}

func TestReportSweepOnly(t *testing.T) {
	t.Parallel()
	dir := reporttest.TempDir(t, reporttest.Options{Seed: 2, Suites: []string{sweep.File}})
	md := render(t, dir)
	for _, want := range []string{"## Device tiers", "## Not in these results", "HTTP four-tier TTFT (probe.csv): suite not run",
		"MB1: decode during a prefill (mb1.csv): suite not run", "MB2: KV transfer bandwidth (transfer.csv): suite not run"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md, "## HTTP") || strings.Contains(md, "## Predicted") {
		t.Errorf("report has a section for a missing suite")
	}
	checkCells(t, md)
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	if _, err := analysis.Load(empty); err == nil || !strings.Contains(err.Error(), "no kvtier CSV") {
		t.Errorf("empty dir: err = %v", err)
	}
	if _, err := analysis.Load(filepath.Join(empty, "nope")); err == nil {
		t.Error("missing dir: no error")
	}
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, sweep.File), []byte("suite,seconds\nsweep,notanumber\n"), 0o644)
	if _, err := analysis.Load(bad); err == nil {
		t.Error("malformed sweep.csv: no error")
	}
}

// TestReportGolden pins the whole report of a synthetic directory, so a
// change in any table shows up in review (go test -update rewrites it).
func TestReportGolden(t *testing.T) {
	t.Parallel()
	dir := reporttest.TempDir(t, reporttest.Options{Seed: 42, Suites: reporttest.Everything})
	md := strings.ReplaceAll(render(t, dir), dir, "DIR")
	const golden = "testdata/report.golden.md"
	if *report.UpdateGolden {
		if err := os.WriteFile(golden, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if md != string(want) {
		t.Errorf("report differs from %s (go test ./report -run Golden -update to accept):\n%s", golden, md)
	}
}
