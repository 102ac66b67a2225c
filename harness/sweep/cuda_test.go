package sweep

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/tiers"
)

func TestCUDABackendSweep(t *testing.T) {
	libs := cudatest.Use(t)
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfgPath, []byte(tinyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mem := range []tiers.MemKind{tiers.Pinned, tiers.Pageable} {
		t.Run(string(mem), func(t *testing.T) {
			o := DefaultOptions()
			g, err := kv.Resolve("", cfgPath, kv.DefaultBlockTokens)
			if err != nil {
				t.Fatal(err)
			}
			o.Geometry = g
			o.Tiers = []string{"hbm", "host", "recompute"}
			o.Prefixes = []int{16, 64}
			o.Policy.Reps, o.Policy.Warmup = 2, 1
			o.TierOptions["host"].(*tiers.HostOptions).Mem = mem
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			b, _, err := tiers.OpenBackend(context.Background(), "cuda", tiers.BackendConfig{NUMA: -1, LibCUDA: libs.CUDA, LibCUBLAS: libs.CUBLAS})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			dir := filepath.Join(t.TempDir(), "out")
			collect := func(m *results.Manifest) []error { return system.Collect(system.Config{Root: "/"}, m) }
			out, err := harness.CreateOutput(dir, "sweep", []string{"test"}, collect, nil)
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			serr := Run(context.Background(), o, b, out, &log)
			if err := out.Close(serr != nil); err != nil {
				t.Fatal(err)
			}
			if serr != nil {
				t.Fatalf("sweep: %v\n%s", serr, log.String())
			}
			rows, _, err := results.ReadCSV(filepath.Join(dir, File))
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, r := range rows {
				seen[r.Tier]++
				if r.Status != results.StatusOK || r.Backend != "cuda" || r.Seconds <= 0 {
					t.Errorf("row %s %s %s: %s %q backend %s seconds %g", r.Tier, r.Layout, r.Get("copy"), r.Status, r.Reason, r.Backend, r.Seconds)
				}
				if r.Tier != "recompute" && r.Rep == 0 && r.Get("verified") != "true" {
					t.Errorf("row %s %s %s rep 0 not verified", r.Tier, r.Layout, r.Get("copy"))
				}
				if r.Get("device") != "Fake CUDA Device 0 [0000:19:00.0]" {
					t.Errorf("device %q", r.Get("device"))
				}
			}
			// 2 layouts × 3 modes × 2 prefixes × 2 reps for each mover.
			if seen["hbm"] != 24 || seen["host"] != 24 || seen["recompute"] != 4 {
				t.Errorf("rows per tier %v", seen)
			}
			m, err := results.ReadManifest(filepath.Join(dir, "manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range m.Backends {
				names = append(names, s.Name)
			}
			if !strings.Contains(strings.Join(names, ","), "cuda") || !strings.Contains(strings.Join(names, ","), "nvml") {
				t.Errorf("manifest backends %v", names)
			}
		})
	}
}
