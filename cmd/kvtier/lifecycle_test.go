package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results"
)

// A run never replaces another run's results unless told to, and two runs
// into the default directory in the same second each get their own.
func TestOutNeverOverwritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"transfer", "--sizes", "1MiB", "--reps", "1", "--warmup", "0", "--layout", "contiguous"}
	mustRunCLI(t, append(args, "--out", dir)...)
	before, _ := os.ReadFile(filepath.Join(dir, "transfer.csv"))
	code, _, stderr := runCLI(t, append(args, "--out", dir)...)
	if code != exitUsage || !strings.Contains(stderr, "already holds results (manifest.json)") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("second run into the same --out: exit %d, stderr %q", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "transfer.csv")); string(after) != string(before) {
		t.Fatal("the refused run touched the earlier rows")
	}
	mustRunCLI(t, append(args, "--out", dir, "--overwrite")...)

	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	os.Chdir(t.TempDir())
	var outs []string
	for range 3 {
		stdout, _ := mustRunCLI(t, args...)
		outs = append(outs, filepath.Dir(strings.TrimSpace(stdout)))
	}
	if outs[0] == outs[1] || outs[1] == outs[2] || outs[0] == outs[2] {
		t.Fatalf("runs shared a default directory: %v", outs)
	}
}

// A run refused at start leaves nothing behind; credentials never reach
// the manifest; a deprecated flag with its new name is refused.
func TestRefusedAndRedacted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runCLI(t, "transfer", "--pool", "1TiB", "--sizes", "1MiB", "--out", dir)
	if code != exitUsage || strings.Count(stderr, "\n") < 1 {
		t.Fatalf("--pool 1TiB: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("a refused run left %s behind (%v)", dir, entries)
	}
	code, _, stderr = runCLI(t, "transfer", "--qps", "2", "--conns", "3", "--out", dir)
	if code != exitUsage || !strings.Contains(stderr, "--conns: given with --qps") {
		t.Fatalf("--qps with --conns: exit %d, stderr %q", code, stderr)
	}
	code, _, _ = runCLI(t, "transfer", "--sizes", "1MiB", "--reps", "1", "--layout", "contiguous", "--out", dir,
		"--line-rate", "100", "--path=intra", "--model-config=", "--seed", "7", "--peer-copy=", "--rdma-device", "http://u:hunter2@x")
	m, err := results.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatalf("exit %d: %v", code, err)
	}
	if c := strings.Join(m.Command, " "); strings.Contains(c, "hunter2") || !strings.Contains(c, "http://u:***@x") {
		t.Errorf("manifest command %q keeps the password", c)
	}
}
