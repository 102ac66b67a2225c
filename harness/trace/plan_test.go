package trace

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/workload"
)

// fakeCosts charges per token: 1 s per token from dram, 10 s per token
// recomputed; the tiers in has are the ones it has a cost for.
type fakeCosts struct{ has []string }

func (f fakeCosts) Has(t string) bool { return slices.Contains(f.has, t) }
func (f fakeCosts) Source() string    { return "host stand-in" }

// Store: the fake measured stores into dram only, 1 s per store and 100
// bytes/s.
func (f fakeCosts) Store(tier string) (float64, float64, bool) { return 1, 100, tier == "dram" }

// Extrapolated: the fake's costs were measured up to 30 tokens.
func (f fakeCosts) Extrapolated(_ analysis.Served, input int64) bool { return input > 30 }

// PastLimit: the fake extrapolates up to 60 tokens.
func (f fakeCosts) PastLimit(_ analysis.Served, input int64) bool { return input > 60 }
func (f fakeCosts) Predict(s analysis.Served, input int64) (float64, float64) {
	served := map[string]int64{}
	for i, name := range tierspec.PlanNames() {
		served[name] = s[i]
	}
	rate := map[string]float64{"hbm": 0.5, "dram": 1, "disk": 2, "remote": 3}
	var load float64
	missing := false
	for tier, n := range served {
		if n > 0 && !f.Has(tier) {
			missing = true
			continue
		}
		if tier != "recompute" {
			load += rate[tier] * float64(n)
		}
	}
	if missing {
		return load, math.NaN()
	}
	return load, load + 10*float64(served["recompute"])
}

func TestPlanTiers(t *testing.T) {
	t.Parallel()
	// Four 10-token blocks: own distances 5 2 9 ∞, leading 5 5 9 ∞.
	h := &workload.Hits{Dist: []int64{5, 2, 9, workload.Inf}, Lead: []int64{5, 5, 9, workload.Inf}, Tokens: []int{10, 10, 10, 10}, Input: 40}
	const B = 100 // bytes per block
	for _, tc := range []struct {
		name      string
		c         Config
		inclusive bool
		want      map[string]int64
	}{
		// Exclusive: hbm holds distances 1-3, dram 4-7. Block 0 (5) from
		// dram, block 1 (2) from hbm, block 2's lead 9 ends the hit.
		{"exclusive", Config{"hbm": 3 * B, "dram": 4 * B}, false, map[string]int64{"hbm": 10, "dram": 10, "recompute": 20}},
		// Inclusive: dram holds distances 1-4 only, so the lead 5 misses.
		{"inclusive", Config{"hbm": 3 * B, "dram": 4 * B}, true, map[string]int64{"recompute": 40}},
		{"inclusive, larger dram", Config{"hbm": 3 * B, "dram": 6 * B}, true, map[string]int64{"hbm": 10, "dram": 10, "recompute": 20}},
		// At the boundary: a tier of S blocks holds distance S.
		{"inclusive, at the boundary", Config{"hbm": 2 * B, "dram": 5 * B}, true, map[string]int64{"hbm": 10, "dram": 10, "recompute": 20}},
		{"exclusive, at the boundary", Config{"hbm": 2 * B, "dram": 3 * B}, false, map[string]int64{"hbm": 10, "dram": 10, "recompute": 20}},
		// An unbounded remote store takes everything seen before.
		{"remote inf", Config{"hbm": 3 * B, "dram": 4 * B, "remote": workload.Unbounded}, false, map[string]int64{"hbm": 10, "dram": 10, "remote": 10, "recompute": 10}},
		// Capacities round down to whole blocks: 399 bytes are 3 blocks.
		{"partial block of capacity", Config{"hbm": 3*B + 99, "dram": 4*B + 99}, false, map[string]int64{"hbm": 10, "dram": 10, "recompute": 20}},
	} {
		p, err := NewPlanner(PlanOptions{Configs: []Config{tc.c}, Inclusive: tc.inclusive, BlockBytes: B, Costs: fakeCosts{PlanTiers}})
		if err != nil {
			t.Fatal(err)
		}
		p.Observe(&workload.Request{Input: 40}, h)
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
	h := &workload.Hits{Dist: []int64{5, 2, 9, workload.Inf}, Lead: []int64{5, 5, 9, workload.Inf}, Tokens: []int{10, 10, 10, 10}, Input: 40}
	p, err := NewPlanner(PlanOptions{
		Configs:    []Config{{"hbm": 300, "dram": 400}, {"hbm": 0, "dram": 1000}},
		BlockBytes: 100, Costs: fakeCosts{[]string{"dram"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Observe(&workload.Request{Input: 40}, h)
	h30 := &workload.Hits{Dist: []int64{5, 2, 9}, Lead: []int64{5, 5, 9}, Tokens: []int{10, 10, 10}, Input: 30}
	p.Observe(&workload.Request{Input: 30}, h30)
	rs := p.Results()
	// hbm served tokens without a cost, recompute too: load leaves hbm
	// out (10 dram tokens at 1 s), TTFT is not predicted.
	if r := rs[0]; !slices.Equal(r.LoadMissing, []string{"hbm"}) || !slices.Equal(r.TTFTMissing, []string{"hbm", "recompute"}) ||
		r.TTFT.N != 0 || r.Load.P50 != 10 || r.Fraction("dram") != 20.0/70 || r.Input != 70 {
		t.Errorf("config 0: %+v", r)
	}
	// No hbm: dram serves the three blocks of lead ≤ 10, only recompute
	// is missing.
	if r := rs[1]; len(r.LoadMissing) != 0 || !slices.Equal(r.TTFTMissing, []string{"recompute"}) || r.Load.Mean != 30 {
		t.Errorf("config 1: %+v", r)
	}
	// The fake's costs reach 30 tokens: one request of two is past them.
	if r := rs[1]; r.Extrapolated != 0.5 {
		t.Errorf("config 1: %+v", r)
	}
	rows := PlanRows(&Result{Path: "/x/t.jsonl", Model: "m", Read: workload.ReadStats{BlockTokens: 10}, Analysis: &workload.Analysis{Touch: workload.TouchForward}}, rs, "/costs")
	r := rows[0]
	if r.Get("missing") != "hbm;recompute" || r.Get("load_excludes") != "hbm" || r.Get("ttft_p90_s") != "" ||
		r.Get("load_p50_s") != "10" || r.Get("extrapolated") != "0.5" || r.Get("hbm_bytes") != "300" || r.Get("cost_source") != "host stand-in" || r.Get("predicted") != "true" {
		t.Errorf("row %+v", r.Extra)
	}
}

// tierSim is a reference LRU hierarchy that moves blocks explicitly and
// counts what is written into each tier: exclusive tiers take a missed
// or promoted block into the first and demote each one's evictions into
// the next; inclusive tiers are each an LRU of every reference.
func tierSim(ids []uint64, caps []int, inclusive bool) []int64 {
	tiers := make([][]uint64, len(caps)) // most recent first
	writes := make([]int64, len(caps))
	insert := func(i int, b uint64) (evicted uint64, ok bool) {
		tiers[i] = append([]uint64{b}, tiers[i]...)
		writes[i]++
		if len(tiers[i]) > caps[i] {
			evicted = tiers[i][len(tiers[i])-1]
			tiers[i] = tiers[i][:len(tiers[i])-1]
			return evicted, true
		}
		return 0, false
	}
	remove := func(i int, b uint64) bool {
		if j := slices.Index(tiers[i], b); j >= 0 {
			tiers[i] = slices.Delete(tiers[i], j, j+1)
			return true
		}
		return false
	}
	for _, b := range ids {
		if inclusive {
			for i := range tiers {
				if remove(i, b) {
					tiers[i] = append([]uint64{b}, tiers[i]...) // a hit moves, writes nothing
				} else {
					insert(i, b)
				}
			}
			continue
		}
		if remove(0, b) {
			tiers[0] = append([]uint64{b}, tiers[0]...)
			continue
		}
		for i := 1; i < len(tiers); i++ {
			remove(i, b)
		}
		for i, cur := 0, b; i < len(tiers); i++ {
			ev, ok := insert(i, cur)
			if !ok {
				break
			}
			cur = ev
		}
	}
	return writes
}

func TestPlanCountsWrites(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 4))
	var ids []uint64
	var reqs []*workload.Request
	for i := range 400 {
		id := uint64(rng.IntN(14))
		ids = append(ids, id)
		reqs = append(reqs, req(0, float64(i)*0.1, 10, 0, id))
	}
	const B = 100
	for _, inclusive := range []bool{false, true} {
		c := Config{"hbm": 2 * B, "dram": 3 * B, "disk": 5 * B}
		p, err := NewPlanner(PlanOptions{Configs: []Config{c}, Inclusive: inclusive, BlockBytes: B, Costs: fakeCosts{PlanTiers}})
		if err != nil {
			t.Fatal(err)
		}
		analyse(t, workload.AnalyzeOptions{OnRequest: p.Observe}, reqs...)
		res := p.Results()[0]
		want := tierSim(ids, []int{2, 3, 5}, inclusive)
		span := reqs[len(reqs)-1].Time
		for i, w := range want {
			if got := res.Writes[i].BlocksPerSec * span; math.Abs(got-float64(w)) > 1e-6 {
				t.Errorf("inclusive %v, %s: %g blocks written, a moving LRU hierarchy writes %d", inclusive, PlanTiers[i], got, w)
			}
		}
		// The fake measured dram's store only: 1 s per store and 100 B/s,
		// far too slow for a block a second or more.
		dram, hbm := res.Writes[1], res.Writes[0]
		if !dram.Checked || !dram.Over() || hbm.Checked || !math.IsNaN(hbm.Utilisation) || res.Writes[3].BlocksPerSec != 0 {
			t.Errorf("inclusive %v: writes %+v", inclusive, res.Writes)
		}
		row := PlanRows(&Result{Path: "t", Read: workload.ReadStats{BlockTokens: 10}, Analysis: &workload.Analysis{Touch: workload.TouchForward}}, []PlanResult{res}, "c")[0]
		if row.Get("store_over") != "dram" || row.Get("store_unchecked") != "hbm;disk" || row.Get("store_util_hbm") != "" ||
			row.Get("store_util_dram") == "" || row.Get("write_remote_Bps") != "0" {
			t.Errorf("inclusive %v: row %+v", inclusive, row.Extra)
		}
	}
}

func TestPlanRoundsToBlocks(t *testing.T) {
	t.Parallel()
	const B = 100
	configs := []Config{{"hbm": 2 * B, "dram": 3*B + 50}, {"hbm": 2*B + 1, "dram": 3*B + 50}, {"hbm": 2*B + 1, "dram": 4*B + 50}, {"hbm": 2 * B, "dram": 3*B + 50}}
	p, err := NewPlanner(PlanOptions{Configs: configs, BlockBytes: B, Costs: fakeCosts{PlanTiers}})
	if err != nil {
		t.Fatal(err)
	}
	// dram's 350 B is said once though two configurations hold it, and
	// both of dram's sizes on one line.
	want := []string{
		"--dram 350 B is not a whole number of 100 B blocks: rounded down to 3 blocks, 300 B; 450 B is not a whole number of 100 B blocks: rounded down to 4 blocks, 400 B",
		"--hbm 201 B is not a whole number of 100 B blocks: rounded down to 2 blocks, 200 B",
	}
	got := slices.Sorted(slices.Values(p.Rounding()))
	if !slices.Equal(got, want) {
		t.Errorf("Rounding() = %q, want %q", got, want)
	}
	if p.blocks[1][0] != 2 || p.blocks[1][1] != 3 {
		t.Errorf("blocks %v, want 2 and 3", p.blocks[1])
	}
}

// A request past the costs' extrapolation limit is counted, not
// predicted: it stays out of the TTFT percentiles.
func TestPlanCountsPastLimit(t *testing.T) {
	t.Parallel()
	p, err := NewPlanner(PlanOptions{Configs: []Config{{"hbm": 0, "dram": 1000}}, BlockBytes: 100, Costs: fakeCosts{PlanTiers}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 4, 8} { // 20, 40 and 80 tokens: inside, extrapolated, past 60
		h := &workload.Hits{Input: 10 * n}
		for range n {
			h.Dist, h.Lead, h.Tokens = append(h.Dist, workload.Inf), append(h.Lead, workload.Inf), append(h.Tokens, 10)
		}
		p.Observe(&workload.Request{Input: 10 * n}, h)
	}
	r := p.Results()[0]
	if r.PastLimit != 1.0/3 || r.Extrapolated != 1.0/3 || r.TTFT.N != 2 || r.TTFT.Max != 400 {
		t.Errorf("past %g extrapolated %g, TTFT %+v; want 1/3, 1/3 and two requests up to 400 s", r.PastLimit, r.Extrapolated, r.TTFT)
	}
}

// Only the capacity flags the user typed have their rounding said: the
// defaults' is in the manifest.
func TestPlanTypedRounding(t *testing.T) {
	t.Parallel()
	var p planFlags
	p.fs = pflag.NewFlagSet("plan", pflag.ContinueOnError)
	p.addCaps(p.fs)
	if err := p.fs.Parse([]string{"--dram", "0,1.45TiB"}); err != nil {
		t.Fatal(err)
	}
	lines := []string{"--hbm 40 GiB is not ...", "--dram 1.45 TiB is not ..."}
	if got := p.typedRounding(lines); !slices.Equal(got, lines[1:]) {
		t.Errorf("typedRounding = %q, want %q", got, lines[1:])
	}
}
