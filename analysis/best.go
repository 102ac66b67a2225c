package analysis

import (
	"cmp"
	"math"
	"slices"

	"github.com/kvtier/kvtier/results"
)

// BestConfigs returns, per tier in tier order, the configuration the
// headline shows: of the tier's GPU configurations (the host stand-in's
// when it has none), those of one GPU (`--gpu all`'s aggregates when
// there are none), the fastest, by p50 time at the longest prefix they
// all measured.
func BestConfigs(keys []SweepCell, cells map[SweepCell][]results.Row) []SweepKey {
	byTier := map[string][]SweepKey{}
	var tiers []string
	var ls []int64
	for _, c := range keys {
		if !slices.Contains(tiers, c.Tier) {
			tiers = append(tiers, c.Tier)
		}
		if !slices.Contains(byTier[c.Tier], c.SweepKey) {
			byTier[c.Tier] = append(byTier[c.Tier], c.SweepKey)
		}
		ls = append(ls, c.L)
	}
	slices.SortFunc(tiers, func(a, b string) int {
		return cmp.Or(cmp.Compare(TierOrder(a), TierOrder(b)), cmp.Compare(a, b))
	})
	slices.Sort(ls)
	ls = slices.Compact(ls)
	slices.Reverse(ls)
	var best []SweepKey
	for _, tier := range tiers {
		cands := byTier[tier]
		if gpu := slices.DeleteFunc(slices.Clone(cands), func(k SweepKey) bool { return IsStandIn(k.Backend) }); len(gpu) > 0 {
			cands = gpu
		}
		// One GPU's cost, not `--gpu all`'s aggregate (its bytes summed).
		if one := slices.DeleteFunc(slices.Clone(cands), func(k SweepKey) bool { return k.GPUs != "" }); len(one) > 0 {
			cands = one
		}
		best = append(best, fastest(cands, cells, ls))
	}
	return best
}

// fastest returns the candidate with the lowest p50 time at the longest
// prefix all of them measured, else at the longest any measured.
func fastest(cands []SweepKey, cells map[SweepCell][]results.Row, ls []int64) SweepKey {
	p50 := func(k SweepKey, L int64) float64 {
		return Summarize(Column(cells[SweepCell{SweepKey: k, L: L}], Seconds)).P50
	}
	for _, all := range []bool{true, false} {
		for _, L := range ls {
			best, bestT, n := cands[0], math.Inf(1), 0
			for _, k := range cands {
				if t := p50(k, L); !math.IsNaN(t) {
					n++
					if t < bestT {
						best, bestT = k, t
					}
				}
			}
			if n > 0 && (!all || n == len(cands)) {
				return best
			}
		}
	}
	return cands[0]
}
