package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// storeLine is the headline's store sentence: per tier, the p50 time of
// its fastest store configuration beside its fastest load's, at those
// of the headline's prefix lengths ls where some tier measured both
// directions; where none did (make bench stores a short prefix only),
// at the lengths that were measured both ways, and it says which. Tiers
// loaded but never stored are named. It is empty when no row measured a
// store.
func storeLine(rows []results.Row, ls []int64) string {
	var stores []results.Row
	for _, r := range rows {
		if !r.IsLoad() {
			stores = append(stores, r)
		}
	}
	if len(stores) == 0 {
		return ""
	}
	lkeys, lcells := analysis.SweepCells(results.Loads(rows))
	skeys, scells := analysis.SweepCells(stores)
	sbest := bestConfigs(skeys, scells)
	p50 := func(cells map[analysis.SweepCell][]results.Row, k analysis.SweepKey, L int64) string {
		d := analysis.Summarize(analysis.Column(cells[analysis.SweepCell{SweepKey: k, L: L}], analysis.Seconds))
		if d.N == 0 {
			return Dash
		}
		return fmtSec(d.P50)
	}
	type pair struct{ load, store analysis.SweepKey }
	var pairs []pair
	var unmeasured []string
	for _, lk := range bestConfigs(lkeys, lcells) {
		if tierspec.Computes(lk.Tier) {
			continue // nothing to store
		}
		i := slices.IndexFunc(sbest, func(k analysis.SweepKey) bool { return k.Tier == lk.Tier })
		if i < 0 {
			unmeasured = append(unmeasured, lk.Tier)
			continue
		}
		pairs = append(pairs, pair{lk, sbest[i]})
	}
	bothWays := func(L int64) bool {
		return slices.ContainsFunc(pairs, func(p pair) bool {
			return p50(scells, p.store, L) != Dash && p50(lcells, p.load, L) != Dash
		})
	}
	at, head := storeLengths(ls, skeys, bothWays)
	var parts []string
	for _, p := range pairs {
		var cells []string
		for _, L := range at {
			cells = append(cells, fmt.Sprintf("%s %s / %s", fmtTokens(L), p50(scells, p.store, L), p50(lcells, p.load, L)))
		}
		parts = append(parts, p.load.Tier+" "+strings.Join(cells, ", "))
	}
	line := head + ": " + strings.Join(parts, "; ")
	if len(unmeasured) > 0 {
		line += "; store not measured: " + strings.Join(unmeasured, ", ")
	}
	return line + "."
}

// storeLengths picks the store line's prefix lengths and its opening:
// those of ls measured both ways (bothWays), naming the rest of ls as
// not stored; where none of ls was, up to four of the store rows'
// lengths measured both ways, said to be those; where none at all, ls.
func storeLengths(ls []int64, skeys []analysis.SweepCell, bothWays func(int64) bool) ([]int64, string) {
	head := "Store / load p50 (fastest configuration of each"
	at := slices.DeleteFunc(slices.Clone(ls), func(L int64) bool { return !bothWays(L) })
	if len(at) > 0 {
		if missing := slices.DeleteFunc(slices.Clone(ls), bothWays); len(missing) > 0 {
			head += "; no store at " + tokenList(missing)
		}
		return at, head + ")"
	}
	var stored []int64
	for _, c := range skeys {
		if bothWays(c.L) {
			stored = append(stored, c.L)
		}
	}
	if len(stored) == 0 {
		return ls, head + ")"
	}
	at = pickL(stored, headlineL)
	return at, fmt.Sprintf("%s; at %s, the prefix lengths measured both ways, none of the headline's %s)", head, tokenList(at), tokenList(ls))
}

// tokenList formats prefix lengths as a comma-separated list.
func tokenList(ls []int64) string {
	s := make([]string, len(ls))
	for i, L := range ls {
		s[i] = fmtTokens(L)
	}
	return strings.Join(s, ", ")
}
