package replayer

import (
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/workload"
)

// Prompts turns the requests of a trace into prompts of token ids that
// share exactly what the trace says they share: hash id h stands for a
// fixed block of token ids drawn from a generator seeded with (Seed, h),
// the same in every request that names h; a request's prompt is its
// blocks' tokens, the last cut to input_length; tokens past its last
// hash id are drawn from a stream of the request's own and shared with
// no other.
type Prompts struct {
	Seed        uint64 // the run's: its seed and nonce mixed
	BlockTokens int    // tokens per hash id
}

// uniqueStream separates the streams of unique tails from those of hash
// ids (hash ids are small integers in Mooncake traces; tails are keyed
// by request index).
const uniqueStream = 0x6b76746965722d74 // "kvtier-t"

// Tokens returns the prompt of r: exactly r.Input token ids.
func (p Prompts) Tokens(r *workload.Request) []int {
	ids := make([]int, 0, r.Input)
	for k, h := range r.Hashes {
		n := r.BlockTokensAt(k)
		if n <= 0 {
			break
		}
		ids = append(ids, serving.TokenIDs(p.Seed, h, n)...)
	}
	if rest := r.Input - len(ids); rest > 0 {
		ids = append(ids, serving.TokenIDs(p.Seed^uniqueStream, uint64(r.Index), rest)...)
	}
	return ids
}

// mixSeed combines a seed and a nonce into one generator seed
// (SplitMix64's finaliser over their xor with the nonce rotated).
func mixSeed(seed, nonce uint64) uint64 {
	x := seed ^ (nonce<<17 | nonce>>47)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
