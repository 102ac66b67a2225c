package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
)

// TestBenchReportMatchesSweep converts a recorded `go test -bench ./bench`
// run (testdata/benchsweep/bench.txt: BenchmarkTiers on the host tier
// and BenchmarkTransfer against the embedded peer, -count 3, the
// configuration lines the benchmarks print) with bench2csv and checks
// that its report is the report of the equivalent kvtier sweep and
// kvtier transfer (testdata/benchsweep/sweep, whose figures the recorded
// run carries): same labels (host stand-in, never measured), same
// figures; and that the cost model sees its two prefix lengths.
func TestBenchReportMatchesSweep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bench, sweep := filepath.Join(dir, "r"), filepath.Join(dir, "s", "r")
	mustRunCLI(t, "bench2csv", "--out", bench, "testdata/benchsweep/bench.txt")
	if err := os.CopyFS(filepath.Dir(sweep), os.DirFS("testdata/benchsweep")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(filepath.Dir(sweep), "sweep"), sweep); err != nil {
		t.Fatal(err)
	}
	var reports []string
	for _, d := range []string{bench, sweep} {
		mustRunCLI(t, "report", d)
		b, err := os.ReadFile(filepath.Join(d, "REPORT.md"))
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, strings.ReplaceAll(string(b), d, "DIR"))
	}
	if reports[0] != reports[1] {
		t.Errorf("the bench run's report differs from the sweep's:\n--- bench\n%s\n--- sweep\n%s", reports[0], reports[1])
	}
	for _, want := range []string{"**Device tiers** (host stand-in;", "**MB2: KV transfer bandwidth** (host stand-in;"} {
		if !strings.Contains(reports[0], want) {
			t.Errorf("report lacks %q:\n%s", want, reports[0])
		}
	}
	if strings.Contains(reports[0], "()") {
		t.Errorf("a label is empty:\n%s", reports[0])
	}
	run, err := analysis.Load(bench)
	if err != nil {
		t.Fatal(err)
	}
	if fits, skipped := analysis.Fits(run.Rows("sweep")); len(fits) != 2 {
		t.Errorf("cost model: %d fits (want one per copy mode), skipped %q", len(fits), skipped)
	}
}
