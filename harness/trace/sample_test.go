package trace

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
