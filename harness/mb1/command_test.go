package mb1

import (
	"testing"
	"time"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/kv"
)

// TestSimEstimate: the --sim estimate of the full grid is of the order it
// takes on 2 cores.
func TestSimEstimate(t *testing.T) {
	t.Parallel()
	mc := Config{Model: kv.DefaultModel, Decode: []int{1, 4, 8}, Prefill: []int{2048, 8192, 32768, 65536, 131072}, Reps: cli.DefaultReps, InjectAfter: time.Second, Seed: 1}
	if est := simEstimate(mc, simConfig(mc, 8192)); est < 15*3*time.Duration(cli.DefaultReps)*time.Second || est > 3*time.Hour {
		t.Errorf("interfere estimate %s", est)
	}
}
