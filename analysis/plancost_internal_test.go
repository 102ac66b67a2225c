package analysis

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results"
)

// TestPlanPicksDiskConfig checks which disk configuration a plan takes:
// O_DIRECT before the page cache, io_uring before pread, cuFile first.
func TestPlanPicksDiskConfig(t *testing.T) {
	t.Parallel()
	keys := []SweepKey{
		{Backend: "cuda", Tier: "disk", Layout: "layerwise", Copy: "batch", Transport: "pread", Path: "o_direct+bounce"},
		{Backend: "cuda", Tier: "disk", Layout: "layerwise", Copy: "batch", Transport: "uring", Path: "pagecache+bounce"},
		{Backend: "cuda", Tier: "disk", Layout: "layerwise", Copy: "batch", Transport: "uring", Path: "o_direct+bounce"},
		{Backend: "cuda", Tier: "disk", Layout: "layerwise", Copy: "batch", Transport: "cufile", Path: "gpudirect"},
	}
	for _, tc := range []struct {
		from []int
		want int
	}{{[]int{0, 1, 2}, 2}, {[]int{0, 1}, 0}, {[]int{0, 1, 2, 3}, 3}, {[]int{3, 0}, 3}} {
		best := keys[tc.from[0]]
		for _, i := range tc.from[1:] {
			if compareForPlan(keys[i], best) < 0 {
				best = keys[i]
			}
		}
		if best != keys[tc.want] {
			t.Errorf("from %v: picked %+v, want %+v", tc.from, best, keys[tc.want])
		}
	}
}

// TestPlanTakesOneGPU checks that the planner costs a tier on one GPU's
// configuration, never on `--gpu all`'s aggregate, whose summed bytes
// over the slowest GPU's time is no one engine's rate: not even when the
// aggregate's copy mode ranks first.
func TestPlanTakesOneGPU(t *testing.T) {
	t.Parallel()
	var rows []results.Row
	for rep := range 3 {
		for _, L := range []int64{1024, 8192} {
			for _, gpu := range []string{"all", "0"} {
				r := results.NewRow("sweep")
				r.Backend, r.Transport, r.Tier, r.Layout, r.Model = "cuda", "memcpy", "host", "layerwise", "m"
				r.PrefixTokens, r.Blocks, r.Bytes, r.Rep = L, L/16, L<<16, rep
				r.Set("copy", "percopy")
				r.Set("gpu", gpu)
				sec := float64(L<<16) / 20e9
				if gpu == "all" {
					r.Set("copy", "batch") // ranked before percopy, were it one GPU's
					r.Bytes *= 8
					sec *= 1.1
				}
				r.SetTime(sec)
				rows = append(rows, r)
			}
		}
	}
	var c PlanCosts
	c.fromSweep(rows)
	for _, pc := range c.Tiers {
		if pc.Measured && strings.Contains(pc.Config, "all GPUs") {
			t.Errorf("%s costed on %s", pc.Tier, pc.Config)
		}
	}
	if !slices.ContainsFunc(c.Tiers, func(pc PlanTierCost) bool { return pc.Measured }) {
		t.Fatalf("no tier costed: %+v", c.Tiers)
	}
}
