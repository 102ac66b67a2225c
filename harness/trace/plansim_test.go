package trace

import (
	"math"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/vllmsim"
)

// TestSimCostsMeasured: plan --sim's costs are measured by replaying
// probe requests through the simulator on its virtual clock, not read
// off its cost model: they carry the virtual clock's label, each point
// is a replayed request's TTFT (within 2 % of the closed form, which
// models the same engine), and the remote tier, which one engine cannot
// replay, is missing with the reason.
func TestSimCostsMeasured(t *testing.T) {
	cfg := vllmsim.Config{TimeScale: 1}
	ls := []int64{1000, 6000, 20000}
	var steps []int
	c, err := SimCosts(cfg, ls, func(i, n int) { steps = append(steps, i) })
	if err != nil {
		t.Fatal(err)
	}
	if c.Dir != SimCostsLabel || c.Source() != "simulated" || len(steps) != len(ls) {
		t.Errorf("costs from %q, source %q, %d progress steps", c.Dir, c.Source(), len(steps))
	}
	probe := map[string]string{"hbm": "gpu", "dram": "cpu", "recompute": "miss"}
	for _, tc := range c.Tiers {
		tier, ok := probe[tc.Tier]
		if !ok {
			if tc.Measured || (tc.Tier == "remote" && !strings.Contains(tc.Reason, "virtual clock")) {
				t.Errorf("%s: measured %v, reason %q", tc.Tier, tc.Measured, tc.Reason)
			}
			continue
		}
		if !tc.Measured || tc.Source != "simulated" || len(tc.Points) != len(ls) {
			t.Errorf("%s: measured %v, source %q, %d points (%s)", tc.Tier, tc.Measured, tc.Source, len(tc.Points), tc.Reason)
			continue
		}
		for _, p := range tc.Points {
			want := vllmsim.EstimateTTFT(cfg, tier, int(p[0]), 0)
			if math.Abs(p[1]/want-1) > 0.02 {
				t.Errorf("%s at %g: measured %.4f s, the cost model gives %.4f s", tc.Tier, p[0], p[1], want)
			}
		}
	}
}

// TestAnswerConfigs: the first tier's knees stand alone; the second's
// hold the knee less the first (exclusive) or the knee itself
// (inclusive), none where the first reaches it alone; each comes with
// its configuration without the tier.
func TestAnswerConfigs(t *testing.T) {
	knees := map[float64]int64{0.5: 10, 0.9: 30}
	for _, tc := range []struct {
		inclusive bool
		want      string
	}{
		{false, "without hbm 0 0|knee hbm 1000 0|knee hbm 3000 0|without dram 1000 0|knee dram 1000 0|knee dram 1000 2000|without dram 5000 0|knee dram 5000 0|knee dram 5000 0"},
		{true, "without hbm 0 0|knee hbm 1000 0|knee hbm 3000 0|without dram 1000 0|knee dram 1000 0|knee dram 1000 3000|without dram 5000 0|knee dram 5000 0|knee dram 5000 0"},
	} {
		cs, rs := AnswerConfigs(knees, 100, []int64{5000, 1000, 1000, 0}, tc.inclusive)
		var got []string
		for i, c := range cs {
			got = append(got, strings.Join([]string{rs[i].Kind, rs[i].Tier, FormatCapacityBytes(c["hbm"]), FormatCapacityBytes(c["dram"])}, " "))
		}
		if g := strings.Join(got, "|"); g != tc.want {
			t.Errorf("inclusive %v:\n got %s\nwant %s", tc.inclusive, g, tc.want)
		}
	}
}
