package gobench

import (
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results"
)

// A skip line is a status=skipped row with its reason, once however
// often -count repeats it; a line too long for the tap passes to the
// benchmark reader, which refuses it.
func TestSkipLines(t *testing.T) {
	t.Parallel()
	in := "backend: host\n" +
		SkipPrefix + "BenchmarkTiers/tier=hbm/layout=layerwise/copy=batch/prefix=16: copy mode batch needs cuMemcpyBatchAsync\n" +
		"BenchmarkTiers/tier=host/layout=layerwise/copy=percopy/prefix=16-2 \t 1 \t 1000 ns/op\n" +
		SkipPrefix + "BenchmarkTiers/tier=hbm/layout=layerwise/copy=batch/prefix=16: copy mode batch needs cuMemcpyBatchAsync\n"
	rows, _, err := Parse(strings.NewReader(in), "in")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(rows), rows)
	}
	var skipped results.Row
	for _, r := range rows {
		if r.Status == results.StatusSkipped {
			skipped = r
		}
	}
	if skipped.Tier != "hbm" || skipped.Reason != "copy mode batch needs cuMemcpyBatchAsync" || skipped.Get("copy") != "batch" || skipped.Backend != "host" {
		t.Errorf("skip row %+v", skipped)
	}
	long := SkipPrefix + strings.Repeat("x", 100<<10) + "\n"
	if _, _, err := Parse(strings.NewReader(long), "in"); err == nil || !strings.Contains(err.Error(), "64 KiB") {
		t.Errorf("a long line: %v", err)
	}
}
