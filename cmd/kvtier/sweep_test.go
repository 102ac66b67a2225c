package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
)

func TestSweepCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr := mustRunCLI(t, "sweep", "--backend", "host", "--tiers", "host,recompute,hbm",
		"--model-config", "testdata/tiny_config.json", "--prefix", "16,32", "--reps", "2", "--warmup", "1", "--out", out)
	if strings.TrimSpace(stdout) != filepath.Join(out, sweep.File) {
		t.Errorf("stdout %q", stdout)
	}
	for _, f := range []string{"sweep.csv", "sweep_summary.csv", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	rows, _, err := results.ReadCSV(filepath.Join(out, sweep.File))
	if err != nil {
		t.Fatal(err)
	}
	var ok, hbmSkipped int
	for _, r := range rows {
		if r.Tier == "host" && r.Status == results.StatusOK {
			ok++
			if r.Bytes != r.Blocks*2048 {
				t.Errorf("bytes %d for %d blocks", r.Bytes, r.Blocks)
			}
		}
		if r.Tier == "hbm" && r.Status == results.StatusSkipped && strings.Contains(r.Reason, "no device memory on the host backend") {
			hbmSkipped++
		}
	}
	// host: 2 layouts × 2 supported modes × 2 prefixes × 2 reps.
	if ok != 16 || hbmSkipped != 12 {
		t.Errorf("ok host rows %d (want 16), hbm skipped %d (want 12: 2 layouts × 3 modes × 2 prefixes)", ok, hbmSkipped)
	}
	m, err := results.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Suite != "sweep" || m.Settings["prefixes"] != "16,32" || m.Interrupted || !slices.Contains(m.Command, "--prefix") {
		t.Errorf("manifest %+v", m)
	}
	// The 16 skipped configurations are said first, once per reason; the
	// progress counts the 10 that run.
	if !regexp.MustCompile(`kvtier sweep: \[\d+/10\] host `).MatchString(stderr) {
		t.Errorf("no progress lines:\n%s", stderr)
	}
	for _, w := range []string{"kvtier sweep: 26 configurations (tier × layout × copy × prefix): 10 run on the host stand-in",
		"\nkvtier sweep:   12 skipped: no device memory on the host backend", "\nkvtier sweep:   4 skipped: copy mode batch"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

// A backend that cannot open is one line and exit 2, nothing written.
func TestSweepBackendUnavailable(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runCLI(t, "sweep", "--backend", "cuda", "--prefix", "16", "--out", out)
	if !slices.Contains(tiers.BackendNames(), "cuda") {
		t.Logf("no cuda backend linked in: %s", stderr)
	}
	if code == exitOK {
		t.Skip("a CUDA device is present")
	}
	if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "kvtier sweep: --backend cuda") && !strings.HasPrefix(stderr, "kvtier sweep: --backend: ") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("results directory created")
	}
}

// The remote tier carries the run token to a peer that demands one
// (kvtier serve --token): with it the rows are ok, without it the sweep
// is refused before it writes anything, and the token is nowhere in what
// the run wrote.
func TestSweepRemoteToken(t *testing.T) {
	t.Parallel()
	const token = "s3cret-run-token"
	addr, _ := startServe(t, "--pool", "1MiB", "--token", token)
	base := []string{"sweep", "--backend", "host", "--tiers", "remote", "--peer", addr,
		"--model-config", "testdata/tiny_config.json", "--prefix", "16,32", "--reps", "2", "--warmup", "0"}

	refused := filepath.Join(t.TempDir(), "refused")
	code, _, stderr := runCLI(t, append(base, "--out", refused)...)
	if code != exitUsage || !strings.Contains(stderr, "token") {
		t.Errorf("without --token: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(refused); !os.IsNotExist(err) {
		t.Errorf("a refused sweep left %s (%v)", refused, err)
	}

	out := filepath.Join(t.TempDir(), "run")
	mustRunCLI(t, append(base, "--token", token, "--out", out)...)
	rows, _, err := results.ReadCSV(filepath.Join(out, sweep.File))
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for _, r := range rows {
		if r.Tier == "remote" && r.Status == results.StatusOK && r.Cell("verified") == "true" {
			ok++
		}
		if r.Status == results.StatusError {
			t.Errorf("error row: %s", r.Reason)
		}
	}
	if ok == 0 {
		t.Fatalf("no ok remote rows in %d rows", len(rows))
	}
	for _, f := range []string{sweep.File, "sweep_summary.csv", "manifest.json"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), token) {
			t.Errorf("%s holds the run token", f)
		}
	}
}
