package workload

import (
	"math"
	"math/rand/v2"
)

// mooncakeLike returns n requests shaped like the Mooncake conversation
// trace (FAST'25): 512-token blocks; hash id 0 opens every request; most
// requests then carry one of a few hundred shared system prompts of 4 to
// 40 blocks (popularity falling as 1/rank); conversations continue
// earlier turns of their session; and every request ends in new blocks
// of its own, their count heavy-tailed (Pareto). About 25 block
// references per request and an APC ceiling near 0.4.
func mooncakeLike(n int, seed uint64) []*Request {
	rng := rand.New(rand.NewPCG(seed, 0x6d6f6f6e))
	const b, prompts = 512, 4000
	next := uint64(1)
	ids := func(k int) []uint64 {
		out := make([]uint64, k)
		for i := range out {
			out[i] = next
			next++
		}
		return out
	}
	sys := make([][]uint64, prompts)
	cum := make([]float64, prompts)
	total := 0.0
	for i := range sys {
		sys[i] = ids(2 + rng.IntN(15))
		total += math.Pow(float64(i+1), -0.5)
		cum[i] = total
	}
	type session struct{ blocks []uint64 }
	var live []*session
	reqs := make([]*Request, 0, n)
	for i := range n {
		var s *session
		if len(live) > 0 && rng.Float64() < 0.3 {
			j := rng.IntN(len(live))
			s = live[j]
			if rng.Float64() < 0.3 { // the session's last turn
				live[j] = live[len(live)-1]
				live = live[:len(live)-1]
			}
		} else {
			s = &session{blocks: []uint64{0}}
			if rng.Float64() < 0.6 {
				p := pick(cum, rng.Float64()*total)
				s.blocks = append(s.blocks, sys[p]...)
			}
			live = append(live, s)
		}
		unique := min(int(math.Ceil(6*math.Pow(rng.Float64(), -1/1.5))), 400)
		s.blocks = append(s.blocks, ids(unique)...)
		hashes := append([]uint64(nil), s.blocks...)
		last := 1 + rng.IntN(b)
		r := req(i, float64(i)*0.3, b, last, hashes...)
		r.Sessioned = false
		reqs = append(reqs, r)
		// The model's answer joins the session's history.
		s.blocks = append(s.blocks, ids(rng.IntN(2))...)
	}
	return reqs
}

// pick returns the first index whose cumulative weight reaches x.
func pick(cum []float64, x float64) int {
	for i, c := range cum {
		if c >= x {
			return i
		}
	}
	return len(cum) - 1
}
