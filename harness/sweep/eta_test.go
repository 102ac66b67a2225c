package sweep

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/tiers"
)

// standInRuns are how long each configuration of a plain kvtier sweep
// on the project's 2-core machine without a GPU took (the stand-in's
// grid, in the order it runs: host, remote, disk by copy mode and io,
// then recompute, skipped over the budget), from the progress lines of
// three runs; the second ran beside other work, which slowed the
// CPU-bound host tier (twice the quiet run's time) more than the disk;
// the third, on the faster machine the project moved to (a plain sweep
// in 24 s), is quick where the first two were slow, the peer's set-up
// and the disk: one set of rates in tiers/estimate.go has to serve both.
var standInRuns = []struct {
	name string
	secs []float64
}{
	{"quiet", []float64{1.4, 1.1, 1.7, 1.2, 3.7, 4.9, 5, 4, 9, 7, 6, 34, 2, 3, 2, 4, 4, 0.1}},
	{"loaded", []float64{2.7, 2.3, 2.8, 1.7, 5.5, 4, 4, 3, 7, 8, 7, 29, 2, 3, 1, 3, 4, 0.1}},
	{"quiet, faster machine", []float64{1, 0.4, 1.2, 0.3, 1.6, 1, 1.7, 1.1, 1.5, 1.2, 2, 9, 0.1, 0.1, 1, 0.1, 1, 0.1}},
}

// TestSweepETAWeighsConfigurations: the sweep plans its progress with
// each configuration's estimated seconds (tiers.Estimate: set-up,
// calibration, every sample), so that the ETA after each configuration
// of a real run is within a factor of 2 of the time that run had left,
// quiet or loaded (the estimates set the pace until the run shows its
// own); counting configurations is off by more (4.7 and 3.0: the disk
// tier's file, its per-copy preads and the peer's set-up ahead), which
// the test checks too so that it would catch a return to counting.
func TestSweepETAWeighsConfigurations(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Prefixes, o.Layouts = StandInPrefixes, StandInLayouts
	o.Tiers = []string{"hbm", "host", "remote", "disk", "recompute"} // not the tests' own
	checkETA(t, o, standInRuns)
}

// benchRun is how long each configuration of make bench's sweep took
// on the project's 2-core machine (--prefix 1k,8k,16k,32k,64k --layout
// layerwise --copy percopy,batch --reps 3 --warmup 1 --disk-max 1GiB):
// the host tier's 64k-token pools took 30 s to set up before its first
// 1k row, where its estimate said 3 (its ETA after that row was 8m1s with
// 1m56s left), and the disk tier's pools were sized for 64k tokens though
// --disk-max stops it at 8k; the second run, quiet on the faster
// machine, took 1 min 51 s against the 3m49s its first ETA said before
// the rates were set for both machines (the embedded peer's pool, filled
// beside the client's, counted as if one after the other).
var benchRun = []struct {
	name string
	secs []float64
}{
	{"make bench", []float64{32, 1, 2, 4, 7, 24, 2, 4, 8, 23, 4, 6, 5, 25, 0.1, 0.1, 0.1, 0.1, 0.1}},
	{"make bench, quiet", []float64{32, 1, 1, 2, 6, 29, 2, 3, 6, 14, 2, 1, 2, 10, 0.1, 0.1, 0.1, 0.1, 0.1}},
}

// TestSweepETABenchGrid: the same on make bench's grid, whose long
// prefixes make the pools' set-up most of a tier's first row.
func TestSweepETABenchGrid(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Prefixes = []int{1 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10}
	o.Layouts = []kv.Layout{kv.Layerwise}
	o.Copy = []tiers.CopyMode{tiers.PerCopy, tiers.Batch}
	o.Policy.Reps, o.Policy.Warmup = 3, 1
	o.Tiers = []string{"hbm", "host", "remote", "disk", "recompute"}
	d := tiers.NewDiskOptions()
	d.Max = "1GiB"
	o.TierOptions["disk"] = d
	checkETA(t, o, benchRun)
}

// checkETA plans a sweep of o on the host backend and checks that its
// weighed ETA is within a factor of 2 of the time each recorded run had
// left, and that counting configurations is further off.
func checkETA(t *testing.T, o Options, runs []struct {
	name string
	secs []float64
}) {
	b, err := tiers.OpenHost(tiers.BackendConfig{NUMA: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	s := &sweeper{opts: o, b: b, log: &log, shared: tiers.NewShared(), scratch: t.TempDir()}
	defer s.shared.Close()
	weights := s.preflight()
	t.Logf("weights %.3g", weights)
	for _, run := range runs {
		if len(weights) != len(run.secs) {
			t.Fatalf("%d configurations run, the recorded run had %d:\n%s", len(weights), len(run.secs), log.String())
		}
		weighed, counted := etaOff(t, run.secs, weights), etaOff(t, run.secs, make([]float64, len(weights)))
		t.Logf("%s run: the ETA is off by a factor of %.2f weighed, %.1f counted", run.name, weighed, counted)
		if weighed > 2 || counted <= 2 {
			t.Errorf("%s run: the ETA is off by a factor of %.1f weighed (limit 2), %.1f counted (want more)", run.name, weighed, counted)
		}
	}
}

// etaOff is the most the ETA of a Progress planned with weights (all
// zero: counting configurations) is off, as a factor, from the time the
// recorded run had left after each of its configurations, while that
// was 5 s or more (in the last few seconds a factor of a second is
// noise).
func etaOff(t *testing.T, run, weights []float64) float64 {
	etas := replayETAs(t, run, weights)
	worst := 1.0
	for i := range etas {
		left := 0.0
		for _, sec := range run[i+1:] {
			left += sec
		}
		if left < 5 {
			break
		}
		worst = max(worst, off(etas[i], left))
	}
	return worst
}

// off is how far a is from b, as a factor of at least 1.
func off(a, b float64) float64 { return max(a/b, b/a) }

// replayETAs plays the recorded run through a Progress planned with
// weights on the virtual clock and returns the ETA in seconds its line
// says after each configuration.
func replayETAs(t *testing.T, run, weights []float64) []float64 {
	var out []float64
	synctest.Test(t, func(t *testing.T) {
		var b strings.Builder
		p := harness.NewProgress(&b)
		p.Start("sweep", false)
		defer p.Stop()
		p.PlanWeights(weights)
		for i, sec := range run {
			p.Begin("config")
			time.Sleep(time.Duration(sec * float64(time.Second)))
			p.End("")
			if i == len(run)-1 {
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
