package sweep

import (
	"context"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
)

// TestSweepStoreDirection runs loads and stores: every row says its
// direction, the host tier's stores are measured and verified, and
// recompute's store is a skipped row saying there is nothing to store.
func TestSweepStoreDirection(t *testing.T) {
	t.Parallel()
	o := tinyOptions(t)
	o.Tiers = []string{"host", "recompute"}
	o.Prefixes = []int{16}
	o.Copy = []tiers.CopyMode{tiers.PerCopy}
	o.Layouts = []kv.Layout{kv.Layerwise}
	o.Directions = []tiers.Direction{tiers.Store, tiers.Load}
	_, rows, _, err := runSweep(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	first := ""
	for _, r := range rows {
		d := r.Get(results.DirectionColumn)
		if first == "" {
			first = d
		}
		seen[r.Tier+" "+d+" "+string(r.Status)]++
		switch {
		case r.Tier == "host" && d == "store" && r.Status == results.StatusOK:
			if r.Get("src_mem") != "pageable" || r.Get("dst_mem") != "pinned" { // the host stand-in's working pool is DRAM
				t.Errorf("host store row: src_mem %q dst_mem %q", r.Get("src_mem"), r.Get("dst_mem"))
			}
		case r.Tier == "recompute" && d == "store":
			if r.Status != results.StatusSkipped || !strings.Contains(r.Reason, "nothing to store") {
				t.Errorf("recompute store row: %s %q", r.Status, r.Reason)
			}
		}
	}
	if first != "load" {
		t.Errorf("first row's direction %q: loads run first", first)
	}
	if seen["host store ok"] != o.Policy.Reps || seen["host load ok"] != o.Policy.Reps || seen["recompute store skipped"] != 1 {
		t.Errorf("rows by tier, direction and status: %v", seen)
	}
	for _, r := range rows {
		if r.Tier == "host" && r.Rep == 0 && r.Get("verified") != "true" {
			t.Errorf("host %s rep 0 not verified", r.Get(results.DirectionColumn))
		}
	}
}

func TestDirectionOptions(t *testing.T) {
	t.Parallel()
	o := tinyOptions(t)
	o.Directions = []tiers.Direction{"sideways"}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "direction") {
		t.Errorf("Validate = %v, want a direction error", err)
	}
	o.Directions = nil
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "direction") {
		t.Errorf("Validate of no direction = %v", err)
	}
	o = DefaultOptions()
	if s := o.Settings()["directions"]; s != "load" {
		t.Errorf("default directions %q, want load", s)
	}
}
