package main

import (
	"fmt"
	"io"
	"time"

	"github.com/kvtier/kvtier/harness/mb1"
	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/vllmsim"
)

// shortRun is how long the short --sim grids take at most: a longer run
// says its estimate before it starts, as --full always does.
const shortRun = 2 * time.Minute

// sayEstimate says, before a --sim run starts, how long it will take when
// it is the full grid or longer than a short one: configs configurations
// of reps reps each, est by the simulator's cost model.
func sayEstimate(w io.Writer, cmd string, full bool, configs, reps int, est time.Duration) {
	if !full && est <= shortRun {
		return
	}
	grid := "the grid"
	if full {
		grid = "--full"
	}
	fmt.Fprintf(w, "kvtier %s: %s: %d configurations × %d reps, estimated %s from the simulator's cost model (a loaded machine takes longer)\n",
		cmd, grid, configs, reps, est.Round(time.Second))
}

// probeSimEstimate is the time a probe of cfg takes against simulated
// servers of sim: per prefix, tier and rep, the requests it sends (the
// measured one, the warm-up that caches the prefix for gpu and cpu, the
// producer's prefill for remote, the eviction flood for cpu), each for
// the TTFT the simulator models.
func probeSimEstimate(cfg probe.Config, sim vllmsim.Config) time.Duration {
	ttft := func(tier string, tokens int) float64 { return vllmsim.EstimateTTFT(sim, tier, tokens, 0) }
	// The flood: fillers of at most 8k tokens (half the pool at most)
	// totalling the GPU pool times the margin (probe.Prober.evict).
	pool := sim.GPUBlocks * sim.BlockSize
	filler := min(8192, pool/2)
	flood := float64((int(float64(pool)*cfg.EvictMargin)+filler-1)/filler) * ttft("miss", filler)
	var sec float64
	for _, l := range cfg.Prefixes {
		for _, tier := range cfg.Tiers {
			t := ttft(tier, l)
			switch tier {
			case "gpu", "remote":
				t += ttft("miss", l)
			case "cpu":
				t += ttft("miss", l) + flood
			}
			sec += t * float64(cfg.Reps)
		}
	}
	return time.Duration(sec * float64(time.Second))
}

// interfereSimEstimate is the time MB1 of cfg takes against simulated
// servers of sim: per cell and rep, each arm's decodes run for the
// inject delay and then as long as the prefill of P tokens beside D
// decodes takes. Only --sim has a full grid: its servers are
// simulators, the second one for the control arm.
func interfereSimEstimate(cfg mb1.Config, sim vllmsim.Config) time.Duration {
	const arms = 3 // interfere, control (on the second simulator) and baseline
	var sec float64
	for _, p := range cfg.Prefill {
		for _, d := range cfg.Decode {
			arm := cfg.InjectAfter.Seconds() + vllmsim.EstimateTTFT(sim, "miss", p, d)
			sec += arms * arm * float64(cfg.Reps)
		}
	}
	return time.Duration(sec * float64(time.Second))
}
