package report

import (
	"fmt"
	"slices"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// probeHeadline is the four-tier TTFT table: p50 per tier at the
// longest prefixes probed (the reference's where measured), with the
// ratios of neighbouring tiers; a real server's rows before the
// simulator's.
func probeHeadline(runs []*analysis.Run) (string, string) {
	cells, groups := analysis.ProbeDists(AllRows(runs, "probe"))
	if len(cells) == 0 {
		return "", ""
	}
	sim := !slices.ContainsFunc(cells, func(c analysis.ProbeCell) bool { return !c.Sim })
	var ls []int64
	for _, c := range cells {
		if c.Sim == sim {
			ls = append(ls, c.L)
		}
	}
	t := NewTable(append(append([]string{"L"}, tierspec.ProbeNames()...), probeRatioHeads()...)...)
	t.Hoist, t.Inline = false, true
	for _, L := range PickL(ls, HeadlineL) {
		row := []string{FmtTokens(L)}
		p50 := map[string]float64{}
		for _, tier := range tierspec.ProbeNames() {
			rows := groups[analysis.ProbeCell{Sim: sim, L: L, Tier: tier}]
			d := analysis.CountedTTFT(rows)
			p50[tier] = d.P50
			switch {
			case d.N > 0:
				row = append(row, FmtSec(d.P50))
			case len(rows) == 0:
				row = append(row, t.Dash(tier+" not probed at this L"))
			default:
				row = append(row, t.Dash(tier+": no verified ok sample (see the section)"))
			}
		}
		t.Add(append(row, tierRatios(t, p50)...)...)
	}
	src := "a real server"
	if sim {
		src = "kvtier sim"
	}
	return fmt.Sprintf("TTFT p50 of %s; hits count only where the server's counters confirmed the tier.", src), t.String()
}

// probeRatioHeads are the headers of tierRatios' cells: miss/remote,
// remote/cpu, cpu/gpu.
func probeRatioHeads() []string {
	var out []string
	for _, pr := range probePairs() {
		out = append(out, pr[0]+"/"+pr[1])
	}
	return out
}

// probePairs are the neighbouring HTTP tiers, slower first.
func probePairs() [][2]string {
	names := tierspec.ProbeNames()
	var out [][2]string
	for i := 1; i < len(names); i++ {
		out = append(out, [2]string{names[i-1], names[i]})
	}
	return out
}

// tierRatios returns the ratios of neighbouring HTTP tiers' p50s:
// miss/remote, remote/cpu, cpu/gpu.
func tierRatios(t *Table, p50 map[string]float64) []string {
	var out []string
	for _, pr := range probePairs() {
		v := FmtRatio(p50[pr[0]], p50[pr[1]])
		if v == "" {
			v = t.Dash("a side of the ratio was not measured")
		}
		out = append(out, v)
	}
	return out
}
