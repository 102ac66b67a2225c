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

// TestServerModelWeights: a real server's configurations are weighed
// by the model of the pool it says it has: its cpu tier's flood evicts
// that pool, so a server with 8 times the GPU blocks weighs its cpu
// configuration several times heavier, its miss alike.
func TestServerModelWeights(t *testing.T) {
	t.Parallel()
	pc := Config{Model: kv.DefaultModel, Tiers: []string{tierMiss, tierCPU}, Prefixes: []int{8192}, Reps: 1, EvictMargin: 1.5}
	small := simWeights(pc, serverModel(pc, Info{BlockSize: 16, GPUBlocks: 4096}))
	large := simWeights(pc, serverModel(pc, Info{BlockSize: 16, GPUBlocks: 8 * 4096}))
	unknown := simWeights(pc, serverModel(pc, Info{}))
	if len(large) != 2 || large[0] != small[0] || large[1] < 4*small[1] || unknown[1] != simWeights(pc, simConfig(pc))[1] {
		t.Errorf("weights: small pool %.3g, large %.3g, unknown %.3g", small, large, unknown)
	}
}
