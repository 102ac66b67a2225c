package trace

import (
	"math"
	"slices"
	"testing"
)

// fakeCosts charges per token: 1 s per token from dram, 10 s per token
// recomputed; the tiers in has are the ones it has a cost for.
type fakeCosts struct{ has []string }

func (f fakeCosts) Has(t string) bool { return slices.Contains(f.has, t) }
func (f fakeCosts) Source() string    { return "host stand-in" }

// Extrapolated: the fake's costs were measured up to 30 tokens.
func (f fakeCosts) Extrapolated(_ map[string]int64, input int64) bool { return input > 30 }
func (f fakeCosts) Predict(served map[string]int64, input int64) (float64, float64) {
	rate := map[string]float64{TierHBM: 0.5, TierDRAM: 1, TierDisk: 2, TierRemote: 3}
	var load float64
	missing := false
	for tier, n := range served {
		if n > 0 && !f.Has(tier) {
			missing = true
			continue
		}
		if tier != TierRecompute {
			load += rate[tier] * float64(n)
		}
	}
	if missing {
		return load, math.NaN()
	}
	return load, load + 10*float64(served[TierRecompute])
}

func TestPlanTiers(t *testing.T) {
	t.Parallel()
	// Four 10-token blocks: own distances 5 2 9 ∞, leading 5 5 9 ∞.
	h := &Hits{Dist: []int64{5, 2, 9, Inf}, Lead: []int64{5, 5, 9, Inf}, Tokens: []int{10, 10, 10, 10}, Input: 40}
	const B = 100 // bytes per block
	for _, tc := range []struct {
		name      string
		c         Config
		inclusive bool
		want      map[string]int64
	}{
		// Exclusive: hbm holds distances 1-3, dram 4-7. Block 0 (5) from
		// dram, block 1 (2) from hbm, block 2's lead 9 ends the hit.
		{"exclusive", Config{HBM: 3 * B, DRAM: 4 * B}, false, map[string]int64{TierHBM: 10, TierDRAM: 10, TierRecompute: 20}},
		// Inclusive: dram holds distances 1-4 only, so the lead 5 misses.
		{"inclusive", Config{HBM: 3 * B, DRAM: 4 * B}, true, map[string]int64{TierRecompute: 40}},
		{"inclusive, larger dram", Config{HBM: 3 * B, DRAM: 6 * B}, true, map[string]int64{TierHBM: 10, TierDRAM: 10, TierRecompute: 20}},
		// At the boundary: a tier of S blocks holds distance S.
		{"inclusive, at the boundary", Config{HBM: 2 * B, DRAM: 5 * B}, true, map[string]int64{TierHBM: 10, TierDRAM: 10, TierRecompute: 20}},
		{"exclusive, at the boundary", Config{HBM: 2 * B, DRAM: 3 * B}, false, map[string]int64{TierHBM: 10, TierDRAM: 10, TierRecompute: 20}},
		// An unbounded remote store takes everything seen before.
		{"remote inf", Config{HBM: 3 * B, DRAM: 4 * B, Remote: Unbounded}, false, map[string]int64{TierHBM: 10, TierDRAM: 10, TierRemote: 10, TierRecompute: 10}},
		// Capacities round down to whole blocks: 399 bytes are 3 blocks.
		{"partial block of capacity", Config{HBM: 3*B + 99, DRAM: 4*B + 99}, false, map[string]int64{TierHBM: 10, TierDRAM: 10, TierRecompute: 20}},
	} {
		p, err := NewPlanner(PlanOptions{Configs: []Config{tc.c}, Inclusive: tc.inclusive, BlockBytes: B, Costs: fakeCosts{PlanTiers}})
		if err != nil {
			t.Fatal(err)
		}
		p.Observe(&Request{Input: 40}, h)
		r := p.Results()[0]
		for _, tier := range PlanTiers {
			if r.Tokens[tier] != tc.want[tier] {
				t.Errorf("%s: %s served %d tokens, want %d", tc.name, tier, r.Tokens[tier], tc.want[tier])
			}
		}
		if r.Load.N != 1 || r.TTFT.N != 1 {
			t.Errorf("%s: load %+v ttft %+v", tc.name, r.Load, r.TTFT)
		}
	}
}

func TestPlanNamesMissingCosts(t *testing.T) {
	t.Parallel()
	h := &Hits{Dist: []int64{5, 2, 9, Inf}, Lead: []int64{5, 5, 9, Inf}, Tokens: []int{10, 10, 10, 10}, Input: 40}
	p, err := NewPlanner(PlanOptions{
		Configs:    []Config{{HBM: 300, DRAM: 400}, {HBM: 0, DRAM: 1000}},
		BlockBytes: 100, Costs: fakeCosts{[]string{TierDRAM}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Observe(&Request{Input: 40}, h)
	h30 := &Hits{Dist: []int64{5, 2, 9}, Lead: []int64{5, 5, 9}, Tokens: []int{10, 10, 10}, Input: 30}
	p.Observe(&Request{Input: 30}, h30)
	rs := p.Results()
	// hbm served tokens without a cost, recompute too: load leaves hbm
	// out (10 dram tokens at 1 s), TTFT is not predicted.
	if r := rs[0]; !slices.Equal(r.LoadMissing, []string{TierHBM}) || !slices.Equal(r.TTFTMissing, []string{TierHBM, TierRecompute}) ||
		r.TTFT.N != 0 || r.Load.P50 != 10 || r.Fraction(TierDRAM) != 20.0/70 || r.Input != 70 {
		t.Errorf("config 0: %+v", r)
	}
	// No hbm: dram serves the three blocks of lead ≤ 10, only recompute
	// is missing.
	if r := rs[1]; len(r.LoadMissing) != 0 || !slices.Equal(r.TTFTMissing, []string{TierRecompute}) || r.Load.Mean != 30 {
		t.Errorf("config 1: %+v", r)
	}
	// The fake's costs reach 30 tokens: one request of two is past them.
	if r := rs[1]; r.Extrapolated != 0.5 {
		t.Errorf("config 1: %+v", r)
	}
	rows := PlanRows(&Result{Path: "/x/t.jsonl", Model: "m", Read: ReadStats{BlockTokens: 10}, Analysis: &Analysis{Touch: TouchForward}}, rs, "/costs")
	r := rows[0]
	if r.Get("missing") != "hbm;recompute" || r.Get("load_excludes") != "hbm" || r.Get("ttft_p90_s") != "" ||
		r.Get("load_p50_s") != "10" || r.Get("extrapolated") != "0.5" || r.Get("hbm_bytes") != "300" || r.Get("cost_source") != "host stand-in" || r.Get("predicted") != "true" {
		t.Errorf("row %+v", r.Extra)
	}
}
