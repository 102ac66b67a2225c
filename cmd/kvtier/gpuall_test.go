package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/results"
)

// TestSweepGPUAll runs the host and hbm tiers on the three GPUs of the fake
// driver at once: per rep, a row per GPU and an aggregate row whose
// bytes are their sum and whose seconds are the slowest GPU's.
func TestSweepGPUAll(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "3")
	cudatest.Use(t)
	dir := filepath.Join(t.TempDir(), "out")
	mustRunCLI(t, "sweep", "--backend", "cuda", "--gpu", "all", "--tiers", "host,hbm", "--model-config", "testdata/tiny_config.json",
		"--prefix", "16,64", "--layout", "layerwise", "--copy", "percopy,contiguous", "--reps", "3", "--warmup", "1", "--out", dir)
	rows, _, err := results.ReadCSV(filepath.Join(dir, sweep.File))
	if err != nil {
		t.Fatal(err)
	}
	type sample struct {
		tier   string
		copy   string
		prefix int64
		rep    int
	}
	per, agg := map[sample][]results.Row{}, map[sample]results.Row{}
	for _, r := range rows {
		if r.Status != results.StatusOK {
			t.Fatalf("row %s gpu %s: %s %q", r.Tier, r.Get("gpu"), r.Status, r.Reason)
		}
		k := sample{r.Tier, r.Get("copy"), r.PrefixTokens, r.Rep}
		if r.Get("gpu") == "all" {
			agg[k] = r
			continue
		}
		if r.Get("gpu") != strconv.Itoa(len(per[k])) || (r.Rep == 0 && r.Get("verified") != "true") {
			t.Errorf("%v: gpu %q verified %q after %d GPU rows", k, r.Get("gpu"), r.Get("verified"), len(per[k]))
		}
		per[k] = append(per[k], r)
	}
	if len(agg) != 2*2*2*3 || len(per) != len(agg) {
		t.Fatalf("%d aggregate rows, %d samples with per-GPU rows", len(agg), len(per))
	}
	for k, a := range agg {
		var sum int64
		var slowest float64
		for _, r := range per[k] {
			sum += r.Bytes
			slowest = max(slowest, r.Seconds)
		}
		if len(per[k]) != 3 || a.Bytes != sum || a.Seconds != slowest || (k.rep == 0 && a.Get("verified") != "true") {
			t.Errorf("%v: %d GPU rows; aggregate bytes %d (sum %d), seconds %g (slowest %g), verified %q",
				k, len(per[k]), a.Bytes, sum, a.Seconds, slowest, a.Get("verified"))
		}
	}
	m, err := results.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Settings["gpu"] != "all" || m.Settings["gpus"] != "3" {
		t.Errorf("manifest gpu %q gpus %q", m.Settings["gpu"], m.Settings["gpus"])
	}
}

// TestSweepGPUAllRefused: --gpu all runs only the host and hbm tiers,
// and only on GPUs; anything else is one line and exit 2.
func TestSweepGPUAllRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ backend, tiers, want string }{
		{"cuda", "remote", "--gpu: all runs only the tiers hbm,host, not remote"},
		{"host", "host", "the host backend has none"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		code, _, stderr := runCLI(t, "sweep", "--backend", tc.backend, "--gpu", "all", "--tiers", tc.tiers, "--out", out)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s %s: exit %d, stderr %q", tc.backend, tc.tiers, code, stderr)
		}
	}
}
