package sweep

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// TestStoreRowsKeptApart checks that store rows never stand in for
// loads: the headline's tier costs come from the load rows (and from
// rows written before the direction column, which are loads), and the
// sweep table names a store configuration as one.
func TestStoreRowsKeptApart(t *testing.T) {
	t.Parallel()
	row := func(dir string, sec float64, rep int) results.Row {
		r := results.NewRow("sweep")
		r.Backend, r.Transport, r.Tier, r.Layout, r.Model = "cuda", "memcpy", "host", "layerwise", "m"
		r.PrefixTokens, r.Blocks, r.Bytes, r.Rep = 1024, 64, 64<<20, rep
		r.Set("copy", "percopy")
		if dir != "" {
			r.Set(results.DirectionColumn, dir)
		}
		r.SetTime(sec)
		return r
	}
	var rows []results.Row
	for rep := range 3 {
		rows = append(rows, row("", 0.004, rep), row("store", 0.001, rep))
	}
	keys, _ := analysis.SweepCells(rows)
	var labels []string
	for _, k := range keys {
		labels = append(labels, k.Label())
	}
	if len(keys) != 2 || strings.Contains(labels[0], "store") || !strings.Contains(labels[1], "host store") {
		t.Fatalf("sweep cells %q: want the load, then the store named as one", labels)
	}
	run := &analysis.Run{Files: map[string][]results.Row{"sweep.csv": rows}}
	line, detail := sweepHeadline([]*analysis.Run{run})
	if strings.Contains(line, "for comparison") {
		t.Errorf("a GPU's headline compares itself with the reference as a stand-in's does: %q", line)
	}
	if !strings.Contains(detail, "4.00 ms") || strings.Contains(detail, "1.00 ms") {
		t.Errorf("headline table %q: want the load's 4 ms, not the store's 1 ms", detail)
	}
	// The headline's store line puts the store beside the load.
	if !strings.Contains(line, "Store / load p50 (fastest configuration of each): host 1k 1.00 ms / 4.00 ms.") {
		t.Errorf("headline %q: want the store's 1 ms beside the load's 4 ms", line)
	}
}

// TestStoreLineLengths checks the prefix lengths of the headline's store
// line: those of the headline's measured both ways, naming the others;
// where the stores cover none of them (make bench stores 1k only), the
// lengths measured both ways, said to be those, never a row of dashes.
func TestStoreLineLengths(t *testing.T) {
	t.Parallel()
	row := func(tier, dir string, L int64, sec float64) results.Row {
		r := results.NewRow("sweep")
		r.Backend, r.Transport, r.Tier, r.Layout, r.Model = "host", "memcpy", tier, "layerwise", "m"
		r.PrefixTokens, r.Blocks, r.Bytes = L, L/16, L<<10
		r.Set("copy", "percopy")
		r.Set(results.DirectionColumn, dir)
		r.SetTime(sec)
		return r
	}
	for _, tc := range []struct {
		name   string
		stored []int64
		want   string
	}{
		{"1k only", []int64{1024},
			"Store / load p50 (fastest configuration of each; at 1k, the prefix lengths measured both ways, none of the headline's 8k, 16k, 32k, 64k): host 1k 2.00 ms / 1.00 ms; store not measured: disk."},
		{"1k and 8k", []int64{1024, 8192},
			"Store / load p50 (fastest configuration of each; no store at 16k, 32k, 64k): host 8k 16.0 ms / 8.00 ms; store not measured: disk."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rows []results.Row
			for _, L := range []int64{1024, 8192, 16384, 32768, 65536} {
				rows = append(rows, row("host", "load", L, float64(L)/1024e3), row("disk", "load", L, float64(L)/512e3))
				if slices.Contains(tc.stored, L) {
					rows = append(rows, row("host", "store", L, float64(L)/512e3))
				}
			}
			run := &analysis.Run{Files: map[string][]results.Row{"sweep.csv": rows}}
			line, _ := sweepHeadline([]*analysis.Run{run})
			if !strings.Contains(line, tc.want) {
				t.Errorf("headline %q\nwant %q", line, tc.want)
			}
			// A host stand-in's headline sets the reference beside it
			// and says where a recompute figure can come from.
			if ref := "at 32k a miss (recompute) 4.60 s against 158 ms from CPU memory, 29.1× less, host-to-device PCIe 54.0 GB/s. A recompute figure for this model can come from `kvtier probe --sim`"; !strings.Contains(line, ref) {
				t.Errorf("host stand-in headline %q\nlacks %q", line, ref)
			}
		})
	}
}

// TestAllGPUsKeptApart checks that `sweep --gpu all`'s aggregate rows
// (gpu "all": the slowest GPU's time, the sum of the bytes) are a
// configuration of their own, named as such, never pooled with the rows
// of single GPUs: pooled, its summed bytes over the slowest time would
// pass for one GPU's rate.
func TestAllGPUsKeptApart(t *testing.T) {
	t.Parallel()
	row := func(gpu string, bytes int64, sec float64, rep int) results.Row {
		r := results.NewRow("sweep")
		r.Backend, r.Transport, r.Tier, r.Layout, r.Model = "cuda", "memcpy", "host", "layerwise", "m"
		r.PrefixTokens, r.Blocks, r.Bytes, r.Rep = 1024, 64, bytes, rep
		r.Set("copy", "percopy")
		r.Set("gpu", gpu)
		r.SetTime(sec)
		return r
	}
	var rows []results.Row
	for rep := range 3 {
		rows = append(rows, row("0", 64<<20, 0.004, rep), row("1", 64<<20, 0.004, rep), row("all", 128<<20, 0.008, rep))
	}
	keys, cells := analysis.SweepCells(rows)
	if len(keys) != 2 || keys[0].GPUs != "" || keys[1].GPUs != results.AllGPUs {
		t.Fatalf("sweep cells %v: want the single GPUs' configuration, then the aggregate's", keys)
	}
	if n := len(cells[keys[0]]); n != 6 {
		t.Errorf("%d rows in the single GPUs' configuration, want 6", n)
	}
	if l := keys[1].Label(); !strings.Contains(l, "all GPUs at once") {
		t.Errorf("aggregate label %q does not say so", l)
	}
	if l := keys[0].Label(); strings.Contains(l, "all GPUs") {
		t.Errorf("single-GPU label %q", l)
	}
	run := &analysis.Run{Files: map[string][]results.Row{"sweep.csv": rows}}
	_, detail := sweepHeadline([]*analysis.Run{run})
	if !strings.Contains(detail, "4.00 ms") || strings.Contains(detail, "8.00 ms") {
		t.Errorf("headline table %q: want one GPU's 4 ms, not the aggregate's 8 ms", detail)
	}
}

// TestStoreHeadline reads hand-written sweep results: the host tier's
// store measured beside its load, the disk's load only; results without
// a direction column are loads. The headline's store line names host's
// store beside its load and disk as not measured; there is none without
// store rows.
func TestStoreHeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir        string
		storesHost bool
	}{{"../../analysis/testdata/plan_store", true}, {"../../analysis/testdata/plan_nodirection", false}} {
		run, err := analysis.Load(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		line, _ := sweepHeadline([]*analysis.Run{run})
		has := strings.Contains(line, "Store / load p50 (fastest configuration of each): host 1k ") &&
			strings.Contains(line, "16k 2.73 ms / 1.36 ms; store not measured: disk.")
		if has != tc.storesHost || (!tc.storesHost && strings.Contains(line, "Store")) {
			t.Errorf("%s: headline %q", tc.dir, line)
		}
	}
}

// TestCurveTitle checks that the tier curve of a store sweep is titled as
// a store, not as the load sweep's "bring back", and a mixed one as both.
func TestCurveTitle(t *testing.T) {
	t.Parallel()
	row := func(dir string) results.Row {
		r := results.NewRow("sweep")
		r.Set(results.DirectionColumn, dir)
		return r
	}
	load, store := row("load"), row("store")
	for _, tc := range []struct {
		rows       []results.Row
		title, per string
	}{
		{[]results.Row{load, load}, "bring back", "time per fetch"},
		{[]results.Row{store}, "write an L-token KV prefix out", "time per store"},
		{[]results.Row{load, store}, "load or store", "time per transfer"},
	} {
		title, per := curveTitle(tc.rows)
		if !strings.Contains(title, tc.title) || per != tc.per {
			t.Errorf("%d rows: title %q, y %q; want %q and %q", len(tc.rows), title, per, tc.title, tc.per)
		}
	}
}
