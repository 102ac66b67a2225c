package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/diskio/disktest"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/results"
)

// TestSweepDiskCommand runs the disk tier from the command line beside
// the host tier: verified rows for both layouts and both I/O modes, its
// options in the manifest, its curve in the plots, its fit in the report.
func TestSweepDiskCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	mustRunCLI(t, "sweep", "--backend", "host", "--tiers", "host,disk", "--copy", "percopy,contiguous",
		"--model-config", "testdata/disk_config.json", "--prefix", "64,256", "--reps", "2", "--warmup", "1",
		"--io", "uring,pread", "--iodepth", "8", "--out", out)
	rows, _, err := results.ReadCSV(filepath.Join(out, sweep.File))
	if err != nil {
		t.Fatal(err)
	}
	verified := map[string]bool{}
	for _, r := range rows {
		if r.Tier != "disk" {
			continue
		}
		if r.Status != results.StatusOK {
			t.Fatalf("disk row %s: %s", r.Status, r.Reason)
		}
		if r.Get("verified") == "true" {
			verified[r.Layout+"/"+r.Transport] = true
		}
	}
	if len(verified) != 4 {
		t.Errorf("verified disk configurations %v, want both layouts with uring and pread", verified)
	}
	m, err := results.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Settings["io"] != "uring,pread" || m.Settings["iodepth"] != "8" {
		t.Errorf("manifest settings %v", m.Settings)
	}
	if _, err := os.Stat("/sys/block"); err == nil && len(m.Disks) == 0 {
		t.Error("the manifest lists no disks")
	}
	for _, f := range []string{"plots/sweep_tiers.png", "plots/costmodel_disk.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	svg, _ := os.ReadFile(filepath.Join(out, "plots/sweep_tiers.svg"))
	if !strings.Contains(string(svg), "disk layerwise/percopy") || !strings.Contains(string(svg), "uring") {
		t.Error("the tier curve has no labelled disk series")
	}
	report := filepath.Join(t.TempDir(), "REPORT.md")
	mustRunCLI(t, "report", "--out", report, out)
	b, _ := os.ReadFile(report)
	_, model, _ := strings.Cut(string(b), "## Tier cost model")
	model, _, _ = strings.Cut(model, "\n## ")
	if !strings.Contains(model, "disk") || !strings.Contains(model, "layerwise/percopy") {
		t.Errorf("the report has no disk fit:\n%s", b)
	}
}

// TestSweepDiskOnTmpfs asks for the disk tier's file on tmpfs: its rows
// are skipped with the reason and the run is clean.
func TestSweepDiskOnTmpfs(t *testing.T) {
	dir := disktest.Tmpfs(t, 16<<20)
	out := filepath.Join(t.TempDir(), "run")
	mustRunCLI(t, "sweep", "--backend", "host", "--tiers", "disk", "--model-config", "testdata/disk_config.json",
		"--prefix", "64", "--reps", "1", "--disk-dir", dir, "--out", out)
	rows, _, err := results.ReadCSV(filepath.Join(out, sweep.File))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Status != results.StatusSkipped {
			t.Errorf("%s %s %s: %s", r.Layout, r.Get("copy"), r.Transport, r.Status)
		}
		if r.Get("copy") != "batch" && r.Transport != "cufile" && !strings.Contains(r.Reason, "is on tmpfs") {
			t.Errorf("reason %q", r.Reason)
		}
	}
}
