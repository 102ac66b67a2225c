package plots_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/harness/knee"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
)

// A knee whose server has no prefix-cache counters (no realized APC, as
// Ollama or llama.cpp without --metrics) still gets its TTFT figure; the
// APC figure is said absent, never drawn from NaN points.
func TestDrawKneeWithoutAPC(t *testing.T) {
	t.Parallel()
	for _, apc := range []string{"", "0.5"} {
		dir := t.TempDir()
		csv, err := results.CreateCSV(filepath.Join(dir, knee.File), results.Names(knee.Columns)...)
		if err != nil {
			t.Fatal(err)
		}
		for i, blocks := range []int{64, 128, 256} {
			r := results.NewRow(knee.Suite.Name)
			r.Backend, r.Transport, r.Status, r.Seconds = "http", "http", results.StatusOK, 0.1
			r.Set("gpu_blocks", blocks)
			r.Set("capacity_tokens", 16*blocks)
			r.Set("ttft_p50_s", 0.1/float64(i+1))
			r.Set("ttft_p90_s", 0.2/float64(i+1))
			r.Set("apc_source", "none")
			if apc != "" && i > 0 {
				r.Set("apc", apc)
			}
			if err := csv.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := csv.Close(); err != nil {
			t.Fatal(err)
		}
		res, err := plots.Draw(dir)
		if err != nil {
			t.Fatalf("apc %q: %v", apc, err)
		}
		ttft := filepath.Join(dir, "plots", "knee_ttft.png")
		apcFig := filepath.Join(dir, "plots", "knee_apc.png")
		if !slices.Contains(res.Files, ttft) || slices.Contains(res.Files, apcFig) == (apc == "") {
			t.Errorf("apc %q: files %q", apc, res.Files)
		}
		if !strings.Contains(strings.Join(res.Absent, "\n"), "realized APC") {
			t.Errorf("apc %q: absent %q", apc, res.Absent)
		}
	}
}
