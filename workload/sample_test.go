package workload

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestShardsWithinItsBound(t *testing.T) {
	t.Parallel()
	reqs, _ := readAll(t, generated(t), Options{})
	o := AnalyzeOptions{BytesPerToken: 1}
	exact := analyseAll(t, reqs, o)
	o.Sample = 0.25
	sampled := analyseAll(t, reqs, o)
	if sampled.Method != MethodShards || sampled.Sample != 0.25 || exact.Method != MethodExact {
		t.Fatalf("methods %s %g, %s", sampled.Method, sampled.Sample, exact.Method)
	}
	bound := sampled.ErrorBound()
	if !(bound > 0) || bound > 0.2 {
		t.Fatalf("error bound %g", bound)
	}
	ec, sc := exact.Curves[0], sampled.Curves[0]
	// Capacities the sample resolves: at least 8/rate blocks.
	for _, blocks := range []int64{64, 256, 1024, 4096, 16384, Inf} {
		e, s := ec.HitRatio(blocks), sc.HitRatio(blocks)
		if math.Abs(e-s) > bound {
			t.Errorf("capacity %d: sampled %.4f, exact %.4f, beyond the bound ±%.4f", blocks, s, e, bound)
		}
	}
	if d := math.Abs(float64(sampled.Distinct-exact.Distinct)) / float64(exact.Distinct); d > 0.1 {
		t.Errorf("distinct blocks %d sampled, %d exact", sampled.Distinct, exact.Distinct)
	}
	if exact.ErrorBound() != 0 {
		t.Error("an exact analysis has no error bound")
	}
}

func TestInstancesBehindARouter(t *testing.T) {
	t.Parallel()
	reqs := randomTrace(rand.New(rand.NewPCG(9, 9)), 400)
	for _, route := range Routes() {
		a, err := NewAnalyzer(AnalyzeOptions{BytesPerToken: 1, Instances: []int{3}, Route: route, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		parts := make([][]*Request, 3)
		for i, r := range reqs {
			r.Index = i
			parts[a.route(r, 3)] = append(parts[a.route(r, 3)], r)
			if err := a.Add(r); err != nil {
				t.Fatal(err)
			}
		}
		an := a.Finish(4)
		c := an.Curves[1]
		if c.Instances != 3 || c.Route != route || an.Curves[0].Instances != 1 {
			t.Fatalf("curves %+v %+v", an.Curves[0], c)
		}
		for _, p := range parts {
			if len(p) == 0 {
				t.Fatalf("route %s left an instance without requests", route)
			}
		}
		// Each instance is a plain LRU over the requests routed to it.
		for _, blocks := range []int{1, 4, 16, 64} {
			var want int64
			for _, p := range parts {
				want += plainLRU(p, blocks, TouchForward)
			}
			if got := hitTokens(c, int64(blocks)); got != want {
				t.Errorf("route %s, %d blocks per instance: %d, plain LRU per instance %d", route, blocks, got, want)
			}
		}
	}
}

func TestWorkingSetWindows(t *testing.T) {
	t.Parallel()
	// Blocks of 10 tokens at 2 bytes each: 20 bytes per block. A 30 s
	// window holds {1,2} at 0 s, {1,2,3} at 10 s, {3,4} at 35 s (1 and 2
	// left at 30 s), {1} at 100 s.
	reqs := []*Request{
		req(0, 0, 10, 0, 1, 2), req(0, 10, 10, 0, 3), req(0, 35, 10, 0, 4), req(0, 100, 10, 0, 1),
	}
	an := analyse(t, AnalyzeOptions{BytesPerToken: 2, Windows: []float64{30}}, reqs...)
	w := an.Windows[0]
	if w.Window != 30 || w.PeakBytes != 60 {
		t.Errorf("window %g peak %g bytes, want 30 and 60", w.Window, w.PeakBytes)
	}
	want := []WindowPoint{{0, 2}, {9, 3}, {33, 2}, {99, 1}}
	if len(w.Points) != len(want) {
		t.Fatalf("points %v, want %v", w.Points, want)
	}
	for i, p := range want {
		if w.Points[i] != p {
			t.Errorf("point %d: %v, want %v", i, w.Points[i], p)
		}
	}
}

// shardsCoverage analyses reqs exactly and at rate over seeds 1 to 5 and
// checks the sampled curves against the exact one at the capacities the
// sample resolves (above 8/rate blocks): the exact curve within the
// stated bound at 95 % of them or more, and within the curve's band at
// that capacity (Curve.Band) at 90 % or more. It returns the widest
// bound.
func shardsCoverage(t *testing.T, reqs []*Request, rate float64) float64 {
	t.Helper()
	o := AnalyzeOptions{BytesPerToken: 1}
	exact := analyseAll(t, reqs, o).Curves[0]
	var caps []int64
	for _, c := range append(exact.Steps(64), Inf) {
		if float64(c) > 8/rate {
			caps = append(caps, c)
		}
	}
	widest, inside, inBand, total := 0.0, 0, 0, 0
	for seed := uint64(1); seed <= 5; seed++ {
		o.Sample, o.Seed = rate, seed
		an := analyseAll(t, reqs, o)
		bound := an.ErrorBound()
		widest = max(widest, bound)
		for _, c := range caps {
			total++
			e, s := exact.HitRatio(c), an.Curves[0].HitRatio(c)
			if math.Abs(s-e) <= an.Curves[0].Band(c) {
				inBand++
			}
			if math.Abs(s-e) <= bound {
				inside++
			} else {
				t.Logf("rate %g seed %d, %d blocks: sampled %.4f, exact %.4f, bound ±%.4f", rate, seed, c, s, e, bound)
			}
		}
	}
	if total < 100 {
		t.Fatalf("only %d capacities above %g blocks", total, 8/rate)
	}
	t.Logf("rate %g: the exact curve inside the stated bound (±%.4f at most) at %d, inside its band at %d of %d capacities", rate, widest, inside, inBand, total)
	if share := float64(inside) / float64(total); share < 0.95 {
		t.Errorf("rate %g: the exact curve lies inside the stated bound at %.0f %% of %d capacities, want ≥ 95 %%", rate, 100*share, total)
	}
	if share := float64(inBand) / float64(total); share < 0.90 {
		t.Errorf("rate %g: the exact curve lies inside the band at its capacity at %.0f %% of %d capacities, want ≥ 90 %%", rate, 100*share, total)
	}
	return widest
}

// TestShardsOnAMooncakeShapedTrace is SHARDS on a trace where one hash id
// opens every request: a sample that always or never holds it is off by
// many points whatever its bound says. At rate 0.5 each of the 8
// sub-samples holds 1/16 of the ids: the spread of the sub-samples is
// small there and a capacity's slot (16 blocks) weighs most.
func TestShardsOnAMooncakeShapedTrace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rate     float64
		requests int
	}{{0.5, 2000}, {0.1, 4000}} {
		if bound, rate := shardsCoverage(t, mooncakeLike(tc.requests, 1), tc.rate), tc.rate; bound > 0.03 {
			t.Errorf("error bound ±%.4f at rate %g, want at most 3 points", bound, rate)
		}
	}
}

// TestShardsOneInAHundred is the same at rate 0.01 on a trace of about
// 10⁶ block references.
func TestShardsOneInAHundred(t *testing.T) {
	if raceDetector {
		t.Skip("10⁶ block references exactly: too slow under the race detector")
	}
	t.Parallel()
	reqs := mooncakeLike(33000, 1)
	shardsCoverage(t, reqs, 0.01)
}

func TestShardsSeedRedrawsTheSample(t *testing.T) {
	t.Parallel()
	reqs := mooncakeLike(1000, 2)
	o := AnalyzeOptions{BytesPerToken: 1, Sample: 0.1}
	draws := map[int64]bool{}
	for seed := range uint64(4) {
		o.Seed = seed
		an := analyseAll(t, reqs, o)
		draws[an.Distinct] = true
		again := analyseAll(t, reqs, o)
		if again.Distinct != an.Distinct || again.CeilingAny != an.CeilingAny {
			t.Errorf("seed %d: two analyses differ", seed)
		}
	}
	if len(draws) < 3 {
		t.Errorf("4 seeds drew %d distinct samples", len(draws))
	}
}

func TestSamplingHashHasNoFixedIDs(t *testing.T) {
	t.Parallel()
	// Over 64 seeds at rate 1/8, id 0 (and id 1) is sampled about 8 times.
	for _, id := range []uint64{0, 1} {
		n := 0
		for seed := range uint64(64) {
			a, err := NewAnalyzer(AnalyzeOptions{BytesPerToken: 1, Sample: 0.125, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			if a.groupOf(a.mixed(id)) != memberNone {
				n++
			}
		}
		if n < 2 || n > 20 {
			t.Errorf("id %d sampled under %d of 64 seeds at rate 1/8", id, n)
		}
	}
}
