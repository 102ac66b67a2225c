package gobench

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results/resultstest"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestParseBenchGolden(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile("testdata/bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	rows, warns, err := Parse(bytes.NewReader(in), "bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteRowsCSV(&out, SweepHeader(), rows); err != nil {
		t.Fatal(err)
	}
	out.WriteString("# warnings\n" + strings.Join(warns, "\n") + "\n")
	const golden = "testdata/bench.golden"
	if *update {
		os.WriteFile(golden, out.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	// By named columns (a column added to the schema and empty here
	// changes nothing), then the warnings as they are.
	gotCSV, gotWarn, _ := strings.Cut(out.String(), "# warnings\n")
	wantCSV, wantWarn, _ := strings.Cut(string(want), "# warnings\n")
	if err := resultstest.SameCSV(gotCSV, wantCSV); err != nil || gotWarn != wantWarn {
		t.Errorf("bench2csv output differs from %s (go test ./results/gobench -run Golden -update writes it again): %v\n%s", golden, err, out.String())
	}
	// Spot checks that the golden file says the right thing.
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6", len(rows))
	}
	r := rows[1]
	if r.Tier != "host" || r.Layout != "layerwise" || r.Get("copy") != "percopy" || r.PrefixTokens != 4096 ||
		r.Backend != "host" || r.Suite != "bench" || r.Rep != 1 || r.Seconds != 0.011 || r.GBps != 36.6 {
		t.Errorf("row 1 = %+v", r)
	}
	if rows[2].PrefixTokens != 16384 || rows[2].Rep != 0 {
		t.Errorf("prefix=16k → %d tokens, rep %d", rows[2].PrefixTokens, rows[2].Rep)
	}
	if rows[3].Get("tflops") != "0.031" || rows[3].Get("compute_dtype") != "fp32" {
		t.Errorf("recompute row extras = %v", rows[3].Extra)
	}
	if rows[4].Transport != "tcp" || rows[4].Get("path") != "loopback" {
		t.Errorf("remote row = %+v", rows[4])
	}
	for _, w := range []string{`name key "bogus" is not a sweep column`, `prefix=lots`} {
		if !strings.Contains(strings.Join(warns, "\n"), w) {
			t.Errorf("warnings lack %q: %q", w, warns)
		}
	}
}

func TestParseBenchEmpty(t *testing.T) {
	t.Parallel()
	if _, _, err := Parse(strings.NewReader("PASS\nok x 1s\n"), "x"); err == nil {
		t.Error("no benchmarks: no error")
	}
}

// A result whose figures no measurement gives (a time of NaN, 0 or +Inf,
// a negative rate) is dropped with a warning, not kept as an ok row.
func TestParseBenchImpossible(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, want string }{
		{"BenchmarkTiers/tier=host/backend=host-2 1 NaN ns/op", "sec/op NaN is not a time"},
		{"BenchmarkTiers/tier=host/backend=host-2 1 0 ns/op", "result dropped"},
		{"BenchmarkTiers/tier=host/backend=host-2 1 +Inf ns/op", "result dropped"},
		{"BenchmarkTiers/tier=host/backend=host-2 1 100 ns/op -5 MB/s", "a rate of -0.005 GB/s is not one"},
		{"BenchmarkTiers/tier=host/backend=host-2 1 100 ns/op +Inf GB/s", "a rate of +Inf GB/s is not one"},
		{"BenchmarkTiers/tier=recompute/backend=host-2 1 100 ns/op -1 TFLOP/s", "tflops -1 is not a figure"},
	} {
		rows, warns, err := Parse(strings.NewReader(tc.line+"\nBenchmarkTiers/tier=host/backend=host-2 1 100 ns/op\n"), "x")
		if err != nil || len(rows) != 1 || !strings.Contains(strings.Join(warns, "\n"), tc.want) {
			t.Errorf("%q: %d rows, warnings %q, error %v; want the one sound row and a warning saying %q", tc.line, len(rows), warns, err, tc.want)
		}
	}
}
