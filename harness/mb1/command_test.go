package mb1

import (
	"testing"
	"time"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/kv"
)

// TestSimEstimate: the --sim estimate of the full grid is of the order it
// takes on 2 cores, and the progress's weights grow with the prefill.
func TestSimEstimate(t *testing.T) {
	t.Parallel()
	mc := Config{Model: kv.DefaultModel, Decode: []int{1, 4, 8}, Prefill: []int{2048, 8192, 32768, 65536, 131072}, Reps: cli.DefaultReps, InjectAfter: time.Second, Seed: 1}
	if est := simEstimate(mc, simConfig(mc, 8192)); est < 15*3*time.Duration(cli.DefaultReps)*time.Second || est > 3*time.Hour {
		t.Errorf("interfere estimate %s", est)
	}
	// The ETA weighs the cells by the same model: a 128k prefill costs
	// far more than a 2k one, so counting cells would mislead.
	w := simWeights(mc, simConfig(mc, 8192))
	if len(w) != 15 || w[len(w)-1] < 10*w[0] {
		t.Errorf("cell weights %.3g: want 15, the last (P=128k, D=8) over 10 times the first (P=2k, D=1)", w)
	}
}
