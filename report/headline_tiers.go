package report

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// bestConfigs returns, per tier in tier order, the configuration the
// headline shows: of the tier's GPU configurations (the host stand-in's
// when it has none), those of one GPU (`--gpu all`'s aggregates when
// there are none), the fastest, by p50 time at the longest prefix they
// all measured.
func bestConfigs(keys []analysis.SweepCell, cells map[analysis.SweepCell][]results.Row) []analysis.SweepKey {
	byTier := map[string][]analysis.SweepKey{}
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
		return cmp.Or(cmp.Compare(analysis.TierOrder(a), analysis.TierOrder(b)), cmp.Compare(a, b))
	})
	slices.Sort(ls)
	ls = slices.Compact(ls)
	slices.Reverse(ls)
	var best []analysis.SweepKey
	for _, tier := range tiers {
		cands := byTier[tier]
		if gpu := slices.DeleteFunc(slices.Clone(cands), func(k analysis.SweepKey) bool { return analysis.IsStandIn(k.Backend) }); len(gpu) > 0 {
			cands = gpu
		}
		// One GPU's cost, not `--gpu all`'s aggregate (its bytes summed).
		if one := slices.DeleteFunc(slices.Clone(cands), func(k analysis.SweepKey) bool { return k.GPUs != "" }); len(one) > 0 {
			cands = one
		}
		best = append(best, fastest(cands, cells, ls))
	}
	return best
}

// fastest returns the candidate with the lowest p50 time at the longest
// prefix all of them measured, else at the longest any measured.
func fastest(cands []analysis.SweepKey, cells map[analysis.SweepCell][]results.Row, ls []int64) analysis.SweepKey {
	p50 := func(k analysis.SweepKey, L int64) float64 {
		return analysis.Summarize(analysis.Column(cells[analysis.SweepCell{SweepKey: k, L: L}], analysis.Seconds)).P50
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

// howOf says what a configuration does in a few words: layout/copy over
// transport and path.
func howOf(k analysis.SweepKey) string {
	how := analysis.JoinNonEmpty(" over ", analysis.JoinNonEmpty("/", k.Layout, k.Copy, k.Dtype), analysis.JoinNonEmpty(" ", k.Transport, k.Route()))
	return analysis.JoinNonEmpty(", ", how, k.AllLabel())
}

// sweepHeadline is the tier table: per prefix length of the reference,
// the p50 time and rate of each tier on its fastest configuration,
// recompute beside, and each fetch tier's break-even prefix against
// recompute.
func sweepHeadline(runs []*analysis.Run) (string, string) {
	rows := results.Loads(allRows(runs, "sweep")) // the headline is of loads
	keys, cells := analysis.SweepCells(rows)
	if len(keys) == 0 {
		return "", ""
	}
	best := bestConfigs(keys, cells)
	var ls []int64
	for _, c := range keys {
		ls = append(ls, c.L)
	}
	ls = pickL(ls, headlineL)
	mixed := slices.ContainsFunc(best, func(k analysis.SweepKey) bool { return analysis.IsStandIn(k.Backend) }) &&
		slices.ContainsFunc(best, func(k analysis.SweepKey) bool { return !analysis.IsStandIn(k.Backend) })
	header := []string{"L"}
	var hows []string
	for _, k := range best {
		name := k.Tier
		if mixed && analysis.IsStandIn(k.Backend) {
			name += " (" + analysis.StandIn + ")"
		}
		header = append(header, name)
		how := "not measured"
		if slices.ContainsFunc(keys, func(c analysis.SweepCell) bool {
			return c.SweepKey == k && len(analysis.Column(cells[c], analysis.Seconds)) > 0
		}) {
			how = howOf(k)
		}
		hows = append(hows, k.Tier+": "+how)
	}
	t := newTable(header...)
	t.hoist, t.inline = false, true
	grid := make([][]string, len(ls))
	for i, L := range ls {
		grid[i] = []string{fmtTokens(L)}
	}
	fits, _ := analysis.Fits(rows)
	for _, k := range best {
		var fit *analysis.Fit
		if i := slices.IndexFunc(fits, func(f analysis.Fit) bool { return f.Key == k }); i >= 0 {
			fit = &fits[i]
		}
		tierColumn(t, grid, k, ls, cells, fit)
	}
	for _, row := range grid {
		t.add(row...)
	}
	t.add(append([]string{"break-even"}, breakEvenCells(t, rows, best)...)...)
	line := fmt.Sprintf("p50 time · GB/s (recompute: TFLOP/s) on each tier's fastest configuration (%s); break-even: the prefix from which a fetch is cheaper than recomputing it.",
		strings.Join(hows, "; "))
	line = analysis.JoinNonEmpty(" ", line, storeLine(allRows(runs, "sweep"), ls))
	return line, t.String()
}

// tierColumn appends one tier's cells at each L to grid: time · rate;
// where it was not measured, the tier's fitted cost model's (in italics,
// noted as predicted), or a dash; one note for the column says why, per
// L where the reasons differ.
func tierColumn(t *table, grid [][]string, k analysis.SweepKey, ls []int64, cells map[analysis.SweepCell][]results.Row, fit *analysis.Fit) {
	var why, at []string
	for i, L := range ls {
		rows := cells[analysis.SweepCell{SweepKey: k, L: L}]
		c := tierCell(k, rows)
		grid[i] = append(grid[i], c)
		if c == "" {
			why = append(why, cmp.Or(reasonAt(rows), "not run at this L"))
			at = append(at, fmtTokens(L))
		}
	}
	if len(why) == 0 {
		return
	}
	note := k.Tier + " not measured: " + why[0]
	if len(slices.Compact(slices.Clone(why))) > 1 {
		note = k.Tier + " not measured at " + at[0] + ": " + why[0] + "; alike at " + strings.Join(at[1:], ", ")
		if digits := regexp.MustCompile(`[0-9][0-9.,e+]*( ?[KMGT]i?B)?`); len(slices.CompactFunc(slices.Clone(why), func(a, b string) bool {
			return digits.ReplaceAllString(a, "#") == digits.ReplaceAllString(b, "#")
		})) > 1 {
			var parts []string
			for i := range why {
				parts = append(parts, at[i]+": "+why[i])
			}
			note = k.Tier + " not measured at " + strings.Join(parts, "; ")
		}
	}
	if fit != nil {
		note = fmt.Sprintf("%s: in italics, predicted by the tier's fitted cost model (measured at L %s – %s); %s",
			k.Tier, fmtTokens(fit.MinL), fmtTokens(fit.MaxL), strings.TrimPrefix(note, k.Tier+" "))
	}
	for i, L := range ls {
		last := len(grid[i]) - 1
		switch {
		case grid[i][last] != "":
		case fit != nil && predictedCell(*fit, L) != "":
			grid[i][last] = predictedCell(*fit, L) + " " + t.note(note)
		default:
			grid[i][last] = t.dash(note)
		}
	}
}

// predictedCell renders a fitted model's time and rate at L in italics,
// "" where the model gives no positive time.
func predictedCell(f analysis.Fit, L int64) string {
	sec := f.TimeAt(L)
	if !(sec > 0) {
		return ""
	}
	rate := f.Bytes(L) / sec / 1e9
	if f.Regressor == "flops" {
		rate = f.Flops(L) / sec / 1e12
	}
	return "*" + fmtSec(sec) + " · " + sig(rate) + "*"
}

// tierCell renders one tier at one L: time · rate, "" when unmeasured.
func tierCell(k analysis.SweepKey, rows []results.Row) string {
	d := analysis.Summarize(analysis.Column(rows, analysis.Seconds))
	if d.N == 0 {
		return ""
	}
	rate := analysis.Summarize(analysis.Column(rows, analysis.GBps)).P50
	if tierspec.Computes(k.Tier) {
		rate = analysis.Summarize(analysis.Column(rows, func(x results.Row) float64 { return x.Float(results.ColTFLOPS) })).P50
	}
	if math.IsNaN(rate) {
		return fmtSec(d.P50)
	}
	return fmtSec(d.P50) + " · " + sig(rate)
}

// breakEvenCells returns the break-even prefix of each configuration
// against the recompute one, or why there is none.
func breakEvenCells(t *table, rows []results.Row, best []analysis.SweepKey) []string {
	fits, _ := analysis.Fits(rows)
	fitOf := func(k analysis.SweepKey) (analysis.Fit, bool) {
		i := slices.IndexFunc(fits, func(f analysis.Fit) bool { return f.Key == k })
		if i < 0 {
			return analysis.Fit{}, false
		}
		return fits[i], true
	}
	ri := slices.IndexFunc(best, func(k analysis.SweepKey) bool { return tierspec.Computes(k.Tier) })
	var out []string
	for _, k := range best {
		switch {
		case tierspec.Computes(k.Tier):
			out = append(out, t.dash("break-even is each fetch tier's against recompute"))
			continue
		case ri < 0:
			out = append(out, t.dash("no recompute configuration in the sweep"))
			continue
		}
		rc, rok := fitOf(best[ri])
		fe, fok := fitOf(k)
		switch {
		case !rok:
			out = append(out, t.dash("no recompute fit: it needs two or more prefix lengths measured"))
		case !fok:
			out = append(out, t.dash("no fit of this tier: it needs two or more prefix lengths measured"))
		case rc.Key.Backend != fe.Key.Backend:
			out = append(out, t.dash("recompute was measured on another backend"))
		default:
			out = append(out, breakEvenShort(analysis.BreakEvenOf(rc, fe)))
		}
	}
	return out
}

// breakEvenShort says a break-even in a few words.
func breakEvenShort(b analysis.BreakEven) string {
	switch b.Kind {
	case analysis.Crossover:
		return commas(b.L) + " tokens"
	case analysis.RecomputeWins:
		return "none up to " + fmtTokens(b.MaxL) + ": recompute cheaper"
	}
	return "none from " + fmtTokens(b.MinL) + ": fetch cheaper"
}

// probeHeadline is the four-tier TTFT table: p50 per tier at the
// longest prefixes probed (the reference's where measured), with the
// ratios of neighbouring tiers; a real server's rows before the
// simulator's.
func probeHeadline(runs []*analysis.Run) (string, string) {
	cells, groups := analysis.ProbeDists(allRows(runs, "probe"))
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
	t := newTable(append(append([]string{"L"}, tierspec.ProbeNames()...), probeRatioHeads()...)...)
	t.hoist, t.inline = false, true
	for _, L := range pickL(ls, headlineL) {
		row := []string{fmtTokens(L)}
		p50 := map[string]float64{}
		for _, tier := range tierspec.ProbeNames() {
			rows := groups[analysis.ProbeCell{Sim: sim, L: L, Tier: tier}]
			d := analysis.CountedTTFT(rows)
			p50[tier] = d.P50
			switch {
			case d.N > 0:
				row = append(row, fmtSec(d.P50))
			case len(rows) == 0:
				row = append(row, t.dash(tier+" not probed at this L"))
			default:
				row = append(row, t.dash(tier+": no verified ok sample (see the section)"))
			}
		}
		t.add(append(row, tierRatios(t, p50)...)...)
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
func tierRatios(t *table, p50 map[string]float64) []string {
	var out []string
	for _, pr := range probePairs() {
		v := fmtRatio(p50[pr[0]], p50[pr[1]])
		if v == "" {
			v = t.dash("a side of the ratio was not measured")
		}
		out = append(out, v)
	}
	return out
}
