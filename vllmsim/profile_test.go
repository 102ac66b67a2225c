package vllmsim

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results"
)

func TestLookupProfile(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{{"", "h20", true}, {"h20", "h20", true}, {"ZERO", "zero", true}, {"h100", "", false}} {
		p, err := LookupProfile(tc.name)
		if (err == nil) != tc.ok || (tc.ok && p.Name != tc.want) {
			t.Errorf("LookupProfile(%q) = %q, %v", tc.name, p.Name, err)
		}
	}
}

func TestProfileFromCSV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sweep.csv")
	w, err := results.CreateCSV(path, "tflops", "direction")
	if err != nil {
		t.Fatal(err)
	}
	row := func(tier string, gbps, tflops float64, st results.Status) {
		r := results.NewRow("sweep")
		r.Tier, r.Status, r.GBps, r.Seconds = tier, st, gbps, 0.01
		if tflops > 0 {
			r.Set("tflops", tflops)
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []float64{50, 52, 54} {
		row("host", v, 0, results.StatusOK)
	}
	row("host", 1, 0, results.StatusSkipped) // not a measurement: ignored
	for _, v := range []float64{20, 22} {    // the offload's store: its own direction
		r := results.NewRow("sweep")
		r.Tier, r.Status, r.GBps, r.Seconds = "host", results.StatusOK, v, 0.01
		r.Set("direction", results.DirectionStore)
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	row("hbm", 3500, 0, results.StatusOK)
	row("recompute", 0, 200, results.StatusOK)
	row("recompute", 0, 100, results.StatusOK)
	w.Close()

	p, err := ProfileFromCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.HostGBps != 52 || p.HBMGBps != 3500 || p.GEMMTFLOPS != 150 {
		t.Errorf("host %v hbm %v gemm %v, want the medians 52, 3500, 150", p.HostGBps, p.HBMGBps, p.GEMMTFLOPS)
	}
	if p.HostStoreGBps != 21 || p.Assumed != "" || !strings.Contains(p.Source, "host store 21 GB/s") {
		t.Errorf("host store %v GB/s, assumed %q, source %q: want the store rows' median 21, measured", p.HostStoreGBps, p.Assumed, p.Source)
	}
	if h20.Assumed == "" || !strings.Contains(h20.Assumed, "store") {
		t.Errorf("h20's store rate is not labelled assumed: %q", h20.Assumed)
	}
	if p.RemoteGBps != h20.RemoteGBps {
		t.Errorf("remote %v: a tier missing from the file keeps its h20 figure %v", p.RemoteGBps, h20.RemoteGBps)
	}
	if want := 150 * h20.AttnTFLOPS / h20.GEMMTFLOPS; p.AttnTFLOPS != want {
		t.Errorf("attention %v, want %v", p.AttnTFLOPS, want)
	}
	if !strings.Contains(p.Source, path) || !strings.Contains(p.Source, "host 52 GB/s") {
		t.Errorf("source %q", p.Source)
	}

	empty := filepath.Join(t.TempDir(), "empty.csv")
	w, _ = results.CreateCSV(empty)
	w.Close()
	if _, err := ProfileFromCSV(empty); err == nil {
		t.Errorf("a file with no usable rows calibrated a profile")
	}
	if _, err := ProfileFromCSV(filepath.Join(t.TempDir(), "missing.csv")); err == nil {
		t.Errorf("a missing file calibrated a profile")
	}
}
