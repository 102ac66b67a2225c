package analysis_test

import (
	"math"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/report/reporttest"
	"github.com/kvtier/kvtier/results"
)

// synthRun loads a synthetic results directory.
func synthRun(t *testing.T, o reporttest.Options) *analysis.Run {
	t.Helper()
	run, err := analysis.Load(reporttest.TempDir(t, o))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// loadCosts loads the plan costs of a results directory's sweep and
// probe rows.
func loadCosts(run *analysis.Run) (*analysis.PlanCosts, error) {
	return analysis.LoadPlanCosts(run.Dir, run.Rows("sweep"), run.Rows("probe"))
}

// tierCost returns the measured cost of a plan tier, nil if none.
func tierCost(c *analysis.PlanCosts, tier string) *analysis.PlanTierCost {
	for i, tc := range c.Tiers {
		if tc.Tier == tier && tc.Measured {
			return &c.Tiers[i]
		}
	}
	return nil
}

// synthCosts loads the plan costs of a synthetic results directory.
func synthCosts(t *testing.T, o reporttest.Options) *analysis.PlanCosts {
	t.Helper()
	c, err := loadCosts(synthRun(t, o))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPlanCostsFromSweep(t *testing.T) {
	t.Parallel()
	c := synthCosts(t, reporttest.Options{Seed: 3, Suites: []string{sweep.File}})
	// The GPU configurations win over the stand-in, layer-wise batch over
	// block-wise per-copy; there is no disk tier in the sweep.
	want := map[string]string{"hbm": "hbm layerwise/batch", "dram": "host layerwise/batch", "remote": "remote layerwise/batch", "recompute": "recompute"}
	for _, tier := range c.Tiers {
		if tier.Tier == "disk" {
			if tier.Measured || !strings.Contains(tier.Reason, "not in these results") {
				t.Errorf("disk: %+v", tier)
			}
			continue
		}
		if !tier.Measured || tier.Source != analysis.SourceGPU || !strings.HasPrefix(tier.Config, want[tier.Tier]) {
			t.Errorf("%s: %+v", tier.Tier, tier)
		}
	}
	if c.Source() != analysis.SourceGPU || c.Model != "qwen3-coder-30b-a3b" || c.Has("disk") || !c.Has("hbm") {
		t.Errorf("source %q model %q", c.Source(), c.Model)
	}
	// 1024 tokens from hbm, 2048 from dram, 1024 recomputed after them:
	// the synthetic models within their 3 % noise.
	load, ttft := c.Predict(analysis.ServedOf(map[string]int64{"hbm": 1024, "dram": 2048, "recompute": 1024}), 4096)
	bpt := float64(reporttest.BlockBytes / reporttest.BlockTokens)
	wantLoad := 12e-6 + 1024*bpt/1.6e12 + 25e-6 + 2048*bpt/50e9
	wantTTFT := wantLoad + reporttest.RecomputeAlpha + (reporttest.Flops(4096)-reporttest.Flops(3072))/reporttest.RecomputeRate
	if math.Abs(load/wantLoad-1) > 0.1 || math.Abs(ttft/wantTTFT-1) > 0.1 {
		t.Errorf("load %g ttft %g, want about %g and %g", load, ttft, wantLoad, wantTTFT)
	}
	// A tier without a cost that serves tokens: TTFT is not predicted.
	if _, ttft := c.Predict(analysis.ServedOf(map[string]int64{"disk": 16, "recompute": 16}), 32); !math.IsNaN(ttft) {
		t.Errorf("disk served with no cost: TTFT %g", ttft)
	}
}

func TestPlanCostsStandInAndMissing(t *testing.T) {
	t.Parallel()
	run := synthRun(t, reporttest.Options{Seed: 4, Suites: []string{sweep.File}})
	var host []results.Row
	for _, r := range run.Files[sweep.File] {
		if r.Backend == "host" {
			host = append(host, r)
		}
	}
	run.Files[sweep.File] = host
	c, err := loadCosts(run)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source() != analysis.SourceStandIn || c.Has("hbm") || !c.Has("dram") {
		t.Fatalf("source %q, tiers %+v", c.Source(), c.Tiers)
	}
	for _, tier := range c.Tiers {
		if tier.Tier == "hbm" && !strings.Contains(tier.Reason, "no measured rows") {
			t.Errorf("hbm reason %q", tier.Reason)
		}
	}
	load, ttft := c.Predict(analysis.ServedOf(map[string]int64{"hbm": 100, "dram": 100, "recompute": 0}), 200)
	if !(load > 0) || !math.IsNaN(ttft) {
		t.Errorf("load %g (dram only), ttft %g (hbm missing)", load, ttft)
	}
	if _, err := loadCosts(&analysis.Run{Dir: "x"}); err == nil {
		t.Error("no rows: no error")
	}
}

func TestPlanCostsFromProbe(t *testing.T) {
	t.Parallel()
	c := synthCosts(t, reporttest.Options{Seed: 5, Suites: []string{probe.File}})
	if c.Source() != analysis.SourceHTTPReal || !c.Has("hbm") || !c.Has("recompute") || c.Has("disk") {
		t.Fatalf("source %q tiers %+v", c.Source(), c.Tiers)
	}
	// A whole prompt served from one tier at a measured L is about that
	// tier's TTFT p50 there (the fit through the points); a miss is the
	// miss fit; load is not separable.
	gpu := tierCost(c, "hbm").Points
	L := int64(gpu[1][0])
	load, ttft := c.Predict(analysis.ServedOf(map[string]int64{"hbm": L}), L)
	if !math.IsNaN(load) || math.Abs(ttft/gpu[1][1]-1) > 0.1 {
		t.Errorf("full GPU hit at %d: load %g ttft %g, want about %g", L, load, ttft, gpu[1][1])
	}
	miss := tierCost(c, "recompute").Growth
	if _, ttft := c.Predict(analysis.ServedOf(map[string]int64{"recompute": L}), L); math.Abs(ttft-miss.At(float64(L))) > 1e-12 {
		t.Errorf("miss at %d: %g", L, ttft)
	}
}

// probeRun is a probe run of hand-written rows: per tier, the TTFT at
// each prefix length.
func probeRun(ttft map[string]func(L float64) float64, ls ...int64) *analysis.Run {
	var rows []results.Row
	for tier, f := range ttft {
		for _, L := range ls {
			r := results.NewRow(probe.File)
			r.Tier, r.PrefixTokens, r.Status = tier, L, results.StatusOK
			r.Set("verified", true)
			r.SetTime(f(float64(L)))
			r.Set("ttft_s", f(float64(L)))
			rows = append(rows, r)
		}
	}
	return &analysis.Run{Dir: "probe", Files: map[string][]results.Row{probe.File: rows}}
}

// TestPlanExtrapolatesAMissLikePrefill: a miss measured at 8k–64k whose
// TTFT grows quadratically (attention) predicts 124k along the quadratic,
// not along the last straight segment, and says it is extrapolated.
func TestPlanExtrapolatesAMissLikePrefill(t *testing.T) {
	t.Parallel()
	truth := func(L float64) float64 { return 0.08 + 1.6e-4*L + 1.7e-9*L*L }
	gpu := func(L float64) float64 { return 0.03 + 2e-7*L }
	c, err := loadCosts(probeRun(map[string]func(float64) float64{"miss": truth, "gpu": gpu}, 8192, 16384, 32768, 65536))
	if err != nil {
		t.Fatal(err)
	}
	const L = 126976
	_, ttft := c.Predict(analysis.ServedOf(map[string]int64{"recompute": L}), L)
	if want := truth(L); math.Abs(ttft/want-1) > 0.03 {
		t.Errorf("miss at %d tokens: %.2f s, quadratic truth %.2f s", L, ttft, want)
	}
	if !c.Extrapolated(analysis.ServedOf(map[string]int64{"recompute": L}), L) {
		t.Errorf("a miss at %d past the 64k measured: not marked extrapolated", L)
	}
	if c.Extrapolated(analysis.ServedOf(map[string]int64{"hbm": 30000, "recompute": 30000}), 60000) {
		t.Error("a request inside the measured range marked extrapolated")
	}
	if c.Extrapolated(analysis.ServedOf(map[string]int64{"hbm": 30000, "recompute": 100000}), 130000) != true {
		t.Error("a miss tail past the measured range not marked extrapolated")
	}
}

// TestPlanFlagsNegativeFixedCost: two prefix lengths whose straight line
// has a negative intercept give a fit problem, and no negative cost.
func TestPlanFlagsNegativeFixedCost(t *testing.T) {
	t.Parallel()
	line := func(L float64) float64 { return -2.27e-3 + 1e-6*L }
	c, err := loadCosts(probeRun(map[string]func(float64) float64{"miss": line, "gpu": line}, 8192, 32768))
	if err != nil {
		t.Fatal(err)
	}
	for _, tier := range []string{"hbm", "recompute"} {
		g := tierCost(c, tier).Growth
		if g.C < 0 || len(tierCost(c, tier).Problems()) == 0 || !strings.Contains(tierCost(c, tier).Problems()[0], "negative fixed cost") {
			t.Errorf("%s: C %g, problems %q", tier, g.C, tierCost(c, tier).Problems())
		}
	}
}

// TestPlanStoreCosts reads hand-written sweep results: the host tier's
// store measured beside its load, the disk's load only; results without
// a direction column are loads.
func TestPlanStoreCosts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir        string
		storesHost bool
	}{{"testdata/plan_store", true}, {"testdata/plan_nodirection", false}} {
		run, err := analysis.Load(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		c, err := loadCosts(run)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Has("dram") || !c.Has("disk") {
			t.Fatalf("%s: loads %+v", tc.dir, c.Tiers)
		}
		// The load fit is the load rows' (50 GB/s), never the store's.
		if r := tierCost(c, "dram").Fit.Rate; math.Abs(r/50e9-1) > 1e-3 {
			t.Errorf("%s: dram load rate %g", tc.dir, r)
		}
		alpha, rate, ok := c.Store("dram")
		if ok != tc.storesHost || (ok && (math.Abs(rate/25e9-1) > 1e-3 || math.Abs(alpha-50e-6) > 1e-7)) {
			t.Errorf("%s: dram store %g s + bytes/%g, %v", tc.dir, alpha, rate, ok)
		}
		if _, _, ok := c.Store("disk"); ok {
			t.Errorf("%s: a disk store with no store rows", tc.dir)
		}
	}
}

// TestPlanRefusesOneLength: the quick start's probe (one prefix length)
// gives no cost to predict TTFT from, and says what to run; the miss
// cost is not a constant that makes a hit's tail free.
func TestPlanRefusesOneLength(t *testing.T) {
	t.Parallel()
	miss := func(L float64) float64 { return 4.6 * L / 32768 }
	hit := func(L float64) float64 { return 0.108 }
	c, err := loadCosts(probeRun(map[string]func(float64) float64{"miss": miss, "gpu": hit, "cpu": hit}, 32768))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range c.Tiers {
		if tc.Tier == "recompute" && (tc.Measured || !strings.Contains(tc.Reason, "one prefix length only (32k)") || !strings.Contains(tc.Reason, "kvtier plan --sim")) {
			t.Errorf("recompute: measured %v, reason %q", tc.Measured, tc.Reason)
		}
	}
	if _, ttft := c.Predict(analysis.ServedOf(map[string]int64{"hbm": 512, "recompute": 30000}), 30512); !math.IsNaN(ttft) {
		t.Errorf("TTFT %g predicted from one length", ttft)
	}
}

// TestPlanStopsAtTheLimit: past twice the longest length measured a
// request is not predicted.
func TestPlanStopsAtTheLimit(t *testing.T) {
	t.Parallel()
	truth := func(L float64) float64 { return 0.08 + 1.6e-4*L + 1.7e-9*L*L }
	c, err := loadCosts(probeRun(map[string]func(float64) float64{"miss": truth, "gpu": truth}, 8192, 16384))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		L    int64
		past bool
	}{{30000, false}, {32768, false}, {40000, true}} {
		served := analysis.ServedOf(map[string]int64{"recompute": tc.L})
		_, ttft := c.Predict(served, tc.L)
		if c.PastLimit(served, tc.L) != tc.past || math.IsNaN(ttft) != tc.past {
			t.Errorf("L %d: past limit %v, TTFT %g; want past %v", tc.L, c.PastLimit(served, tc.L), ttft, tc.past)
		}
	}
}
