package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvtier/kvtier/results"
)

// req builds a request of session s at time t whose blocks are hashes,
// each of b tokens except the last, which holds last tokens (0: b).
func req(s int, t float64, b, last int, hashes ...uint64) *Request {
	in := len(hashes) * b
	if last > 0 {
		in = in - b + last
	}
	return &Request{Session: s, Time: t, Input: in, Hashes: hashes, BlockTokens: b, Parent: -1, Think: nan, Sessioned: true}
}

// analyse runs the requests through an exact Analyzer.
func analyse(t *testing.T, o AnalyzeOptions, reqs ...*Request) *Analysis {
	t.Helper()
	if o.BytesPerToken == 0 {
		o.BytesPerToken = 1
	}
	a, err := NewAnalyzer(o)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		r.Index = i
		if err := a.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	b := 1
	if len(reqs) > 0 {
		b = reqs[0].BlockTokens
	}
	return a.Finish(b)
}

// plainLRU simulates one LRU cache of c blocks request by request: every
// block looked up at arrival, the hit is the leading run of blocks
// present, then every block is touched in order and the least recently
// used are evicted. It returns the hit tokens.
func plainLRU(reqs []*Request, c int, touch Touch) int64 {
	var order []uint64 // least recently used first
	var hit int64
	for _, r := range reqs {
		present := map[uint64]bool{}
		for _, h := range order {
			present[h] = true
		}
		for k, h := range r.Hashes {
			if !present[h] {
				break
			}
			hit += int64(r.BlockTokensAt(k))
		}
		for i := range r.Hashes {
			if touch == TouchReverse {
				i = len(r.Hashes) - 1 - i
			}
			h := r.Hashes[i]
			for j, o := range order {
				if o == h {
					order = append(order[:j], order[j+1:]...)
					break
				}
			}
			order = append(order, h)
			if len(order) > c {
				order = order[1:]
			}
		}
	}
	return hit
}

func hitTokens(c *Curve, blocks int64) int64 { return int64(math.Round(c.HitTokens(blocks))) }

func TestCyclicPatternLargerThanCache(t *testing.T) {
	t.Parallel()
	// Four single-block requests cycling A B C D three times: an LRU of
	// three blocks always evicts the block needed next (no hit at all),
	// one of four holds the cycle and hits everything after the first.
	var reqs []*Request
	for i := range 12 {
		reqs = append(reqs, req(0, float64(i), 10, 0, uint64(i%4)))
	}
	an := analyse(t, AnalyzeOptions{}, reqs...)
	c := an.Curves[0]
	for _, tc := range []struct {
		blocks int64
		want   int64
	}{{1, 0}, {2, 0}, {3, 0}, {4, 80}, {100, 80}} {
		if got := hitTokens(c, tc.blocks); got != tc.want {
			t.Errorf("capacity %d blocks: hit tokens %d, want %d", tc.blocks, got, tc.want)
		}
		if plain := plainLRU(reqs, int(tc.blocks), TouchForward); plain != tc.want {
			t.Errorf("plain LRU at %d: %d, want %d", tc.blocks, plain, tc.want)
		}
	}
	if got, want := an.CeilingAny, 80.0/120; math.Abs(got-want) > 1e-12 {
		t.Errorf("ceiling %g, want %g", got, want)
	}
	if k, _ := c.Knee(0.95); k != 4 {
		t.Errorf("knee 95%% at %d blocks, want 4", k)
	}
}

func TestSharedSystemPrompt(t *testing.T) {
	t.Parallel()
	// Four sessions each send [S1 S2 own] once: blocks S1, S2 (16 tokens
	// each) are a shared system prompt. From the second session on, the
	// leading run S1 S2 hits: 3 × 32 tokens of 4 × 40 input tokens.
	var reqs []*Request
	for s := range 4 {
		reqs = append(reqs, req(s, float64(s), 16, 8, 1, 2, uint64(100+s)))
	}
	an := analyse(t, AnalyzeOptions{SharedSessions: 3}, reqs...)
	if got, want := an.CeilingAny, 96.0/160; math.Abs(got-want) > 1e-12 {
		t.Errorf("any-session ceiling %g, want %g", got, want)
	}
	if an.CeilingIntra != 0 {
		t.Errorf("intra-session ceiling %g, want 0: no session repeats itself", an.CeilingIntra)
	}
	if an.ReuseShared != 1 || an.ReuseIntra != 0 || an.ReuseCross != 0 {
		t.Errorf("reuse intra/cross/shared %g/%g/%g, want 0/0/1", an.ReuseIntra, an.ReuseCross, an.ReuseShared)
	}
	// Four sessions reach a threshold of four.
	if an := analyse(t, AnalyzeOptions{SharedSessions: 4}, reqs...); an.ReuseShared != 1 {
		t.Errorf("threshold 4, four sessions: shared %g, want 1", an.ReuseShared)
	}
	// With 5 sessions needed for "shared" the same hits are cross-session.
	an = analyse(t, AnalyzeOptions{SharedSessions: 5}, reqs...)
	if an.ReuseCross != 1 || an.ReuseShared != 0 {
		t.Errorf("threshold 5: reuse cross/shared %g/%g, want 1/0", an.ReuseCross, an.ReuseShared)
	}
	// Capacity: after [S1 S2 own0] (own0 most recent), S1 is at distance
	// 3, S2 at 2; the leading run needs 3 blocks. Partial last blocks
	// hold 8 tokens and never hit.
	c := an.Curves[0]
	for _, tc := range []struct{ blocks, want int64 }{{2, 0}, {3, 96}, {4, 96}} {
		if got := hitTokens(c, tc.blocks); got != tc.want {
			t.Errorf("capacity %d: hit %d, want %d", tc.blocks, got, tc.want)
		}
	}
}

func TestInterleavedSessions(t *testing.T) {
	t.Parallel()
	// Two sessions alternate; each turn extends its own previous prompt
	// by one block. Session 0: [1], [1 2], [1 2 3]; session 1: [7], [7 8],
	// [7 8 9]; interleaved 0,1,0,1,0,1; blocks of 10 tokens.
	reqs := []*Request{
		req(0, 0, 10, 0, 1), req(1, 1, 10, 0, 7),
		req(0, 2, 10, 0, 1, 2), req(1, 3, 10, 0, 7, 8),
		req(0, 4, 10, 0, 1, 2, 3), req(1, 5, 10, 0, 7, 8, 9),
	}
	an := analyse(t, AnalyzeOptions{}, reqs...)
	// Hits with an infinite cache: 10 + 10 + 20 + 20 = 60 of 120 tokens,
	// all within the session.
	if an.CeilingAny != 0.5 || an.CeilingIntra != 0.5 || an.ReuseIntra != 1 {
		t.Errorf("ceiling any %g intra %g, reuse intra %g; want 0.5, 0.5, 1", an.CeilingAny, an.CeilingIntra, an.ReuseIntra)
	}
	c := an.Curves[0]
	// Forward touching, most recent first: after r0 r1 the stack is 7 1;
	// r2 finds 1 at distance 2 and leaves 2 1 7; r3 finds 7 at 3 and
	// leaves 8 7 2 1; r4 finds 1 at 4 and 2 at 3 (leads 4 4) and leaves
	// 3 2 1 8 7; r5 finds 7 at 5 and 8 at 4 (leads 5 5).
	for _, tc := range []struct{ blocks, want int64 }{{1, 0}, {2, 10}, {3, 20}, {4, 40}, {5, 60}} {
		if got := hitTokens(c, tc.blocks); got != tc.want {
			t.Errorf("capacity %d: hit %d, want %d", tc.blocks, got, tc.want)
		}
		if plain := plainLRU(reqs, int(tc.blocks), TouchForward); plain != tc.want {
			t.Errorf("plain LRU at %d: %d, want %d", tc.blocks, plain, tc.want)
		}
	}
	// Knees: 30 tokens (half the ceiling) first at 4 blocks, 42 at 5.
	for _, k := range []struct {
		frac float64
		want int64
	}{{0.5, 4}, {0.7, 5}, {0.95, 5}} {
		if got, ok := c.Knee(k.frac); !ok || got != k.want {
			t.Errorf("knee at %g of the ceiling: %d blocks, want %d", k.frac, got, k.want)
		}
	}
	// Reverse touching leaves block 1 above 2: r2 leaves 1 2 7; r3 finds
	// 7 at 3 and leaves 7 8 1 2; r4 finds 1 at 3 and 2 at 4 (leads 3 4),
	// so a cache of 3 keeps the head of the prefix: 10+10+10 tokens; r5
	// finds 7 at 4 and 8 at 5 (leads 4 5).
	an = analyse(t, AnalyzeOptions{Touch: TouchReverse}, reqs...)
	for _, tc := range []struct{ blocks, want int64 }{{2, 10}, {3, 30}, {4, 50}, {5, 60}} {
		if got := hitTokens(an.Curves[0], tc.blocks); got != tc.want {
			t.Errorf("reverse touch, capacity %d: hit %d, want %d", tc.blocks, got, tc.want)
		}
		if plain := plainLRU(reqs, int(tc.blocks), TouchReverse); plain != tc.want {
			t.Errorf("plain LRU reverse at %d: %d, want %d", tc.blocks, plain, tc.want)
		}
	}
}

// randomTrace builds n requests over a small alphabet of prefix chains so
// that hits, partial hits and evictions all happen.
func randomTrace(rng *rand.Rand, n int) []*Request {
	var reqs []*Request
	for i := range n {
		root := uint64(rng.IntN(6)) * 1000
		k := 1 + rng.IntN(8)
		hashes := make([]uint64, k)
		for j := range hashes {
			hashes[j] = root + uint64(j)
			if rng.IntN(10) == 0 { // a divergent block
				hashes[j] = uint64(rng.IntN(50))
			}
		}
		reqs = append(reqs, req(rng.IntN(20), float64(i), 4, 1+rng.IntN(4), hashes...))
	}
	return reqs
}

func TestCurveAgreesWithPlainLRU(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		for _, touch := range []Touch{TouchForward, TouchReverse} {
			t.Run(fmt.Sprintf("seed%d/%s", seed, touch), func(t *testing.T) {
				t.Parallel()
				reqs := randomTrace(rand.New(rand.NewPCG(seed, 1)), 300)
				c := analyse(t, AnalyzeOptions{Touch: touch}, reqs...).Curves[0]
				for _, blocks := range []int{1, 2, 3, 5, 8, 13, 21, 40, 80} {
					want := plainLRU(reqs, blocks, touch)
					if got := hitTokens(c, int64(blocks)); got != want {
						t.Errorf("capacity %d: one-pass %d, plain LRU %d", blocks, got, want)
					}
				}
			})
		}
	}
}

func TestStackCompaction(t *testing.T) {
	t.Parallel()
	// More references than the clock's first size, over few blocks, so
	// the clock is compacted many times; distances must not change, nor
	// the working sets of windows stepping on across compactions.
	s := stack{horizon: 500}
	windows := []*window{{w: 500}, {w: 37}}
	ref := make([]int, 300) // block -> time of last touch
	for b := range ref {
		ref[b] = math.MinInt // never
	}
	// count returns the blocks last touched after time t.
	count := func(t int) int64 {
		n := int64(0)
		for _, l := range ref {
			if l > t {
				n++
			}
		}
		return n
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for now := range 10000 {
		for _, w := range windows {
			if got, want := w.blocks(&s, float64(now)), count(now-int(w.w)-1); got != want {
				t.Fatalf("step %d: %d distinct blocks in the last %g, want %d", now, got, w.w, want)
			}
		}
		b := int32(rng.IntN(len(ref)))
		want := int64(Inf)
		if last := ref[b]; last >= 0 {
			want = 1 + count(last)
		}
		if got := s.distance(b); got != want {
			t.Fatalf("step %d block %d: distance %d, want %d", now, b, got, want)
		}
		s.now = float64(now)
		s.touch(b)
		ref[b] = now
	}
	if len(s.owner) > 2*minSlots {
		t.Errorf("%d slots for 300 blocks", len(s.owner))
	}
	if len(s.marks) > 501 {
		t.Errorf("%d marks kept for a horizon of 500", len(s.marks))
	}
}

// TestStackWeights checks distances in weights, across the switch from
// unit weights (a bit set) to a weighted tree and across compactions.
func TestStackWeights(t *testing.T) {
	t.Parallel()
	var s stack
	type ref struct{ at, w int }
	refs := map[int32]ref{}
	rng := rand.New(rand.NewPCG(5, 6))
	for now := range 6000 {
		b := int32(rng.IntN(200))
		if last, ok := refs[b]; ok {
			want := int64(last.w)
			for _, r := range refs {
				if r.at > last.at {
					want += int64(r.w)
				}
			}
			if got := s.distance(b); got != want {
				t.Fatalf("step %d block %d: distance %d, want %d", now, b, got, want)
			}
		}
		w := 1
		if now >= 2000 {
			w = []int{1, 3, 10}[rng.IntN(3)]
		}
		s.touchWeighted(b, int64(w))
		refs[b] = ref{now, w}
	}
}

// describeSorting gives Describe's statistics, leaving NaN and ±Inf out.
func TestDescribeSorting(t *testing.T) {
	t.Parallel()
	for _, xs := range [][]float64{{3, 1, 2, 2.5}, {3, math.NaN(), 1, math.Inf(1), 2}, {math.Inf(-1), 4}, nil} {
		want := results.Describe(xs)
		want.Values = nil
		got := describeSorting(slices.Clone(xs))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%v: %+v, want %+v", xs, got, want)
		}
	}
}
