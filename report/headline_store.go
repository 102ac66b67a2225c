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
// its fastest store configuration beside its fastest load's at the
// reference prefix lengths ls; tiers loaded but never stored are named.
// It is empty when no row measured a store.
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
	lkeys, lcells := sweepCells(results.Loads(rows))
	skeys, scells := sweepCells(stores)
	sbest := bestConfigs(skeys, scells)
	p50 := func(cells map[sweepCell][]results.Row, k analysis.SweepKey, L int64) string {
		d := analysis.Summarize(analysis.Column(cells[sweepCell{k, L}], analysis.Seconds))
		if d.N == 0 {
			return Dash
		}
		return fmtSec(d.P50)
	}
	var parts, unmeasured []string
	for _, lk := range bestConfigs(lkeys, lcells) {
		if tierspec.Computes(lk.Tier) {
			continue // nothing to store
		}
		i := slices.IndexFunc(sbest, func(k analysis.SweepKey) bool { return k.Tier == lk.Tier })
		if i < 0 {
			unmeasured = append(unmeasured, lk.Tier)
			continue
		}
		var at []string
		for _, L := range ls {
			at = append(at, fmt.Sprintf("%s %s / %s", fmtTokens(L), p50(scells, sbest[i], L), p50(lcells, lk, L)))
		}
		parts = append(parts, lk.Tier+" "+strings.Join(at, ", "))
	}
	line := "Store / load p50 (fastest configuration of each): " + strings.Join(parts, "; ")
	if len(unmeasured) > 0 {
		line += "; store not measured: " + strings.Join(unmeasured, ", ")
	}
	return line + "."
}
