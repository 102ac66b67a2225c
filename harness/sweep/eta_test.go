package sweep

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/tiers"
)

// standInRun is how long each configuration of a plain kvtier sweep on
// the project's 2-core machine without a GPU took (the stand-in's grid,
// in the order it runs: host, remote, disk by copy mode and io, then
// recompute, skipped over the budget), from its progress lines.
var standInRun = []float64{1.4, 1.1, 1.7, 1.2, 3.7, 4.9, 5, 4, 9, 7, 6, 34, 2, 3, 2, 4, 4, 0.1}

// TestSweepETAWeighsConfigurations: the sweep plans its progress with
// each configuration's estimated seconds (tiers.Estimate: set-up,
// calibration, every sample), so that the ETA after each configuration
// of a real run is within a factor of 2 of the time that run had
// left; counting configurations is off by more (4.6 after the second:
// the disk tier's file, its per-copy preads and the peer's set-up
// ahead), which the test checks too so that it would catch a return to
// counting.
func TestSweepETAWeighsConfigurations(t *testing.T) {
	t.Parallel()
	b, err := tiers.OpenHost(tiers.BackendConfig{NUMA: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	o := DefaultOptions()
	o.Prefixes, o.Layouts = StandInPrefixes, StandInLayouts
	o.Tiers = []string{"hbm", "host", "remote", "disk", "recompute"} // not the tests' own
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	s := &sweeper{opts: o, b: b, log: &log, shared: tiers.NewShared(), scratch: t.TempDir()}
	defer s.shared.Close()
	weights := s.preflight()
	if len(weights) != len(standInRun) {
		t.Fatalf("%d configurations run, the recorded run had %d:\n%s", len(weights), len(standInRun), log.String())
	}
	t.Logf("weights %.3g", weights)
	etas := replayETAs(t, weights)
	counted := replayETAs(t, make([]float64, len(weights)))
	worst, worstCounted := 1.0, 1.0
	for i := range etas {
		left := 0.0
		for _, sec := range standInRun[i+1:] {
			left += sec
		}
		if left < 5 {
			break // the last few seconds: a factor of a second is noise
		}
		worst, worstCounted = max(worst, off(etas[i], left)), max(worstCounted, off(counted[i], left))
		t.Logf("[%d] %.0f s left: ETA %.0f s weighed, %.0f s counted", i+1, left, etas[i], counted[i])
	}
	if worst > 2 {
		t.Errorf("the weighed ETA is off by a factor of %.1f, limit 2", worst)
	}
	if worstCounted <= 2 {
		t.Errorf("counting configurations is off by %.1f only: the recorded run no longer tells them apart", worstCounted)
	}
}

// off is how far a is from b, as a factor of at least 1.
func off(a, b float64) float64 { return max(a/b, b/a) }

// replayETAs plays the recorded run through a Progress planned with
// weights (all zero: counting configurations) on the virtual clock and
// returns the ETA in seconds its line says after each configuration.
func replayETAs(t *testing.T, weights []float64) []float64 {
	var out []float64
	synctest.Test(t, func(t *testing.T) {
		var b strings.Builder
		p := harness.NewProgress(&b)
		p.Start("sweep", false)
		defer p.Stop()
		p.PlanWeights(weights)
		for i, sec := range standInRun {
			p.Begin("config")
			time.Sleep(time.Duration(sec * float64(time.Second)))
			p.End("")
			if i == len(standInRun)-1 {
				break
			}
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			_, eta, ok := strings.Cut(lines[len(lines)-1], "ETA ")
			d, err := time.ParseDuration(strings.TrimPrefix(strings.TrimSuffix(eta, ")"), "under "))
			if !ok || err != nil {
				t.Fatalf("no ETA in %q", lines[len(lines)-1])
			}
			out = append(out, d.Seconds())
		}
	})
	return out
}
