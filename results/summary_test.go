package results

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestDescribeKnownData(t *testing.T) {
	t.Parallel()
	s := Describe([]float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5, math.NaN()})
	want := Stats{N: 10, Mean: 5.5, Stddev: math.Sqrt(82.5 / 9), Min: 1, P10: 1.9, P50: 5.5, P90: 9.1, P99: 9.91, Max: 10}
	got, exp := s.Row(), want.Row()
	if s.N != want.N {
		t.Errorf("N = %d, want %d", s.N, want.N)
	}
	for i, name := range StatNames {
		if !near(got[i], exp[i]) {
			t.Errorf("%s = %v, want %v", name, got[i], exp[i])
		}
	}
	one := Describe([]float64{2.5})
	if one.P50 != 2.5 || one.Min != 2.5 || !math.IsNaN(one.Stddev) {
		t.Errorf("one value: %+v", one)
	}
	none := Describe(nil)
	for i, v := range none.Row() {
		if !math.IsNaN(v) {
			t.Errorf("empty %s = %v, want NaN", StatNames[i], v)
		}
	}
}

func TestSummarizeFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "sweep.csv")
	s, err := CreateCSV(in, "copy", "tflops")
	if err != nil {
		t.Fatal(err)
	}
	write := func(r Row) {
		t.Helper()
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	for i, sec := range []float64{0.4, 0.1, 0.2, 0.3} {
		r := NewRow("sweep")
		r.Tier, r.Layout, r.Bytes, r.Rep = "host", "layerwise", 1e9, i
		r.Set("copy", "percopy")
		r.SetTime(sec)
		write(r)
	}
	// A group with one error among ok rows.
	r := NewRow("sweep")
	r.Tier, r.Layout = "host", "blockwise"
	r.Set("copy", "percopy")
	r.Fail(errors.New("data mismatch at pool offset 8"))
	write(r)
	r = NewRow("sweep")
	r.Tier, r.Layout, r.Bytes = "host", "blockwise", 2e9
	r.Set("copy", "percopy")
	r.SetTime(1)
	write(r)
	// Skipped only.
	for range 2 {
		r = NewRow("sweep")
		r.Tier, r.Layout = "hbm", "layerwise"
		r.Skip("no device memory on the host backend")
		write(r)
	}
	// Recompute: no bytes, tflops set.
	r = NewRow("sweep")
	r.Tier = "recompute"
	r.Set("tflops", 0.05)
	r.SetTime(2)
	write(r)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "sweep_summary.csv")
	if err := SummarizeFile(in, out, []string{"tier", "layout", "copy"}); err != nil {
		t.Fatal(err)
	}
	rows, header, err := ReadCSV(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"seconds_p50", "gb_per_s_p99", "tflops_mean", "n_skipped", "n_error"} {
		if !strings.Contains(strings.Join(header, ","), c) {
			t.Errorf("header lacks %s: %v", c, header)
		}
	}
	if len(rows) != 4 {
		t.Fatalf("got %d groups, want 4", len(rows))
	}
	host := rows[0]
	if host.Tier != "host" || host.Get("n") != "4" || host.Get("seconds_min") != "0.1" || host.Get("seconds_max") != "0.4" {
		t.Errorf("host group = %v", host.Extra)
	}
	if !near(host.Float("seconds_p50"), 0.25) || !near(host.Float("seconds_mean"), 0.25) || !near(host.Float("gb_per_s_max"), 10) {
		t.Errorf("host stats = %v", host.Extra)
	}
	bw := rows[1]
	if bw.Get("n") != "1" || bw.Get("n_error") != "1" || !strings.Contains(bw.Reason, "mismatch") || bw.Get("seconds_p50") != "1" || bw.Get("gb_per_s_p50") != "2" {
		t.Errorf("blockwise group = %v", bw.Extra)
	}
	hbm := rows[2]
	if hbm.Get("n") != "0" || hbm.Get("n_skipped") != "2" || hbm.Reason != "no device memory on the host backend" {
		t.Errorf("skipped group = %v", hbm.Extra)
	}
	for _, c := range SummaryColumns(nil, []string{"seconds", "gb_per_s"})[4:] {
		if hbm.Get(c) != "" {
			t.Errorf("skipped group has %s = %q, want empty", c, hbm.Get(c))
		}
	}
	rc := rows[3]
	if rc.Get("tflops_p50") != "0.05" || rc.Get("gb_per_s_p50") != "" || rc.Get("seconds_p50") != "2" {
		t.Errorf("recompute group = %v", rc.Extra)
	}
}

func TestSummarizeFileMissingInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := SummarizeFile(filepath.Join(dir, "none.csv"), filepath.Join(dir, "s.csv"), []string{"tier"}); err == nil {
		t.Error("no error for a missing input")
	}
}
