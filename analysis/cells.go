package analysis

import (
	"cmp"

	"github.com/kvtier/kvtier/results"
)

// A SweepCell is one configuration of the device sweep at one prefix
// length.
type SweepCell struct {
	SweepKey
	L int64
}

// SweepCells groups sweep rows by configuration and prefix length.
func SweepCells(rows []results.Row) ([]SweepCell, map[SweepCell][]results.Row) {
	return GroupBy(rows, func(x results.Row) SweepCell { return SweepCell{SweepKeyOf(x), x.PrefixTokens} },
		func(a, b SweepCell) int {
			return cmp.Or(CompareSweepKeys(a.SweepKey, b.SweepKey), cmp.Compare(a.L, b.L))
		})
}

// A ProbeCell is the TTFT of one tier at one prefix length.
type ProbeCell struct {
	Sim  bool
	L    int64
	Tier string
}

// ProbeDists returns the TTFT distribution of every (source, L, tier) with
// the rows behind it.
func ProbeDists(rows []results.Row) ([]ProbeCell, map[ProbeCell][]results.Row) {
	return GroupBy(rows, func(x results.Row) ProbeCell {
		return ProbeCell{x.Get(results.ColSimulated) == "true", x.PrefixTokens, x.Tier}
	}, func(a, b ProbeCell) int {
		return cmp.Or(CompareBool(a.Sim, b.Sim), cmp.Compare(a.L, b.L), cmp.Compare(TierOrder(a.Tier), TierOrder(b.Tier)))
	})
}

// CountedTTFT is the distribution of the TTFT of the rows that count
// (ProbeCounted).
func CountedTTFT(rows []results.Row) Dist {
	var v []float64
	for _, x := range rows {
		if ProbeCounted(x) {
			v = append(v, ProbeTTFT(x))
		}
	}
	return Summarize(v)
}
