package probe

import (
	"testing"
	"time"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/kv"
)

// TestTierName: the probe's --tiers takes the tiers' every name (the
// sweep's hbm, host, recompute; its own gpu, cpu, miss; dram). Before, it
// refused hbm.
func TestTierName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, probe string }{
		{"hbm", "gpu"}, {"gpu", "gpu"}, {"host", "cpu"}, {"cpu", "cpu"}, {"dram", "cpu"},
		{"recompute", "miss"}, {"miss", "miss"}, {"remote", "remote"}, {"disk", ""}, {"tape", ""},
	} {
		got, err := tierName(tc.name)
		if got != tc.probe || (err != nil) != (tc.probe == "") {
			t.Errorf("tierName(%q) = %q, %v; want %q", tc.name, got, err, tc.probe)
		}
	}
}

// TestSimEstimate: the --sim estimate grows with the grid and is of the
// order the full grid takes on 2 cores (it ran 9.5 minutes).
func TestSimEstimate(t *testing.T) {
	t.Parallel()
	pc := Config{Model: kv.DefaultModel, Tiers: Tiers, Prefixes: []int{1024, 2048, 4096, 8192, 16384, 32768, 65536}, Reps: cli.DefaultReps, EvictMargin: 1.5, Seed: 1}
	full := simEstimate(pc, simConfig(pc))
	pc.Prefixes = []int{1024, 4096, 16384}
	short := simEstimate(pc, simConfig(pc))
	if !(short > 0 && full > 2*short && full > time.Minute && full < 2*time.Hour) {
		t.Errorf("probe estimates: full %s, short %s", full, short)
	}
}
