package trace

import (
	"slices"
	"testing"
	"testing/synctest"

	_ "github.com/kvtier/kvtier/harness/probe" // registers the cost probe
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/replayer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/workload"
)

// TestPlanServer: plan --base-url measures the costs against the server
// the probe's way (here a kvtier sim on an in-memory network, in virtual
// time: no lag), at the trace's lengths, learns the capacities it runs
// with, and replays a sample against it serially.
func TestPlanServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		s, url, err := net.Start(vllmsim.Config{GPUBlocks: 512, CPUBlocks: 2048, TimeScale: 1, EnablePromptTokensDetails: true}, "server")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		g, _ := kv.LookupModel(kv.DefaultModel)
		bpt := g.BytesPerToken()
		ps := &planServer{url: url, http: net.Client()}
		costs, ls, err := ps.measure(t.Context(), results.Stats{P10: 1000, P50: 4000, P90: 4000, P99: 4000, Max: 4000}, bpt)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ls, []int64{1000, 4000}) || costs.Dir != url || costs.Source() != "simulated" {
			t.Errorf("lengths %v, costs from %q (%s)", ls, costs.Dir, costs.Source())
		}
		for _, tc := range costs.Tiers {
			if want := tc.Tier == "hbm" || tc.Tier == "dram" || tc.Tier == "recompute"; tc.Measured != want || (want && len(tc.Points) != len(ls)) {
				t.Errorf("%s: measured %v, %d points (%s)", tc.Tier, tc.Measured, len(tc.Points), tc.Reason)
			}
		}
		if ps.config["hbm"] != 512*16*bpt || ps.config["dram"] != 2048*16*bpt {
			t.Errorf("the server's capacities %v", ps.config)
		}
		w, err := replayer.Generate(t.Context(), workload.GenOptions{
			Sessions: 3, Turns: 3, SystemTokens: 1024, TurnTokens: 256, OutputTokens: 256, BlockTokens: 16, Seed: 1, Fixed: true,
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		sample := &checkSample{limit: CheckTokens}
		for _, r := range w.Requests {
			sample.take(r)
		}
		got := ps.check(t.Context(), sample)
		if got.Err != nil || !(got.APC > 0.3 && got.APC < 1) || got.TTFT.N != len(w.Requests) {
			t.Errorf("check: APC %.3f, %d TTFTs of %d requests, %v", got.APC, got.TTFT.N, len(w.Requests), got.Err)
		}
	})
}
