package sweep

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// writeSweep writes the fetch tiers' table and recompute's, one row per
// configuration and prefix length, sorted by tier, layout, copy mode and
// L; what every row shares is said once above each.
func writeSweep(w io.Writer, r *analysis.Run) {
	keys, groups := analysis.SweepCells(r.Rows(Suite.Name))
	fetch := report.NewTable("tier", "layout", "copy", "backend", "transport", "L", "bytes", "n", "time p50", "time p10–p90", "GB/s p50", "GB/s p10–p90", "link frac")
	rc := report.NewTable("backend", "transport", "dtype", "L", "n", "time p50", "time p10–p90", "TFLOP/s p50")
	var g report.Gaps
	for _, k := range keys {
		rows := groups[k]
		g.Add(k.Label(), "L="+report.FmtTokens(k.L), rows)
		sec := analysis.Summarize(analysis.Column(rows, analysis.Seconds))
		if sec.N == 0 {
			continue
		}
		backend := k.Backend
		if analysis.IsStandIn(k.Backend) {
			backend = "host stand-in (CPU DRAM), not a GPU"
		}
		transport := analysis.JoinNonEmpty(" / ", k.Transport, k.Route(), k.Sync)
		if tierspec.Computes(k.Tier) {
			tf := analysis.Summarize(analysis.Column(rows, func(x results.Row) float64 { return x.Float(results.ColTFLOPS) }))
			tfc := report.Sig(tf.P50)
			if tf.N == 0 {
				tfc = rc.Dash("no tflops column in the rows")
			}
			rc.Add(backend, report.OrDash(transport), report.OrDash(k.Dtype), report.FmtTokens(k.L), fmt.Sprint(sec.N),
				report.FmtSec(sec.P50), report.FmtRange(sec.P10, sec.P90, report.FmtSec), tfc)
			continue
		}
		gb, gbRange, frac := rateCells(fetch, rows)
		fetch.Add(k.Tier, orNote(fetch, k.Layout, "not applicable to this tier"), orNote(fetch, k.Copy, "not applicable to this tier"),
			backend, report.OrDash(transport), report.FmtTokens(k.L), report.FmtBytes(float64(rows[0].Bytes)), fmt.Sprint(sec.N),
			report.FmtSec(sec.P50), report.FmtRange(sec.P10, sec.P90, report.FmtSec), gb, gbRange, frac)
	}
	if fetch.Len()+rc.Len() == 0 {
		report.Paragraph(w, "No ok rows in sweep.csv.")
	}
	if fetch.Len() > 0 {
		fetch.Write(w)
	}
	if rc.Len() > 0 {
		report.Paragraph(w, "Recompute: the model's prefill GEMMs and attention for L tokens; it moves no KV bytes, so its rate is in TFLOP/s.")
		rc.Write(w)
	}
	g.Write(w, Suite.Name)
}

// orNote returns s, or a dash marked with note when s is empty.
func orNote(t *report.Table, s, note string) string {
	if s == "" {
		return t.Dash(note)
	}
	return s
}

// rateCells returns the GB/s p50, its p10–p90 and the fraction of the
// link's rate of a fetch cell's rows.
func rateCells(t *report.Table, rows []results.Row) (gb, gbRange, frac string) {
	g := analysis.Summarize(analysis.Column(rows, analysis.GBps))
	if g.N == 0 {
		gb = t.Dash("no bytes recorded")
		return gb, gb, gb
	}
	link := analysis.Summarize(analysis.Column(rows, func(x results.Row) float64 { return x.Float(results.ColLinkGBPerSecond) }))
	if link.N > 0 && link.P50 > 0 {
		frac = fmt.Sprintf("%.2f", g.P50/link.P50)
	} else {
		frac = t.Dash("link limit unknown (link_gb_per_s empty)")
	}
	return report.Sig(g.P50), report.FmtRange(g.P10, g.P90, report.Sig), frac
}

func writeModel(w io.Writer, r *analysis.Run) {
	fits, skipped := analysis.Fits(r.Rows(Suite.Name))
	if len(fits) == 0 {
		report.Paragraph(w, "No configuration has two or more prefix lengths measured, so no cost model can be fitted.")
	} else {
		report.Paragraph(w, "Least-squares fit over every ok sample, weighted by 1/t² so that relative errors count (R² is the weighted one): fetch tiers t(L) = α + bytes(L)/β with bytes(L) = ceil(L/block)·block_bytes; recompute t(L) = α + flops(L)/rate.")
		t := report.NewTable("tier", "layout/copy", "backend", "transport", "model", "n", "L measured", "α", "β / rate", "R²")
		for _, f := range fits {
			rate := ""
			if math.IsInf(f.Rate, 1) {
				rate = t.Dash("time does not grow with size: slope ≤ 0")
			} else if f.Regressor == "flops" {
				rate = report.Sig(f.Rate/1e12) + " TFLOP/s"
			} else {
				rate = report.Sig(f.Rate/1e9) + " GB/s"
			}
			model := "α + bytes/β"
			if f.Regressor == "flops" {
				model = "α + flops/rate"
			}
			backend := f.Key.Backend
			if analysis.IsStandIn(backend) {
				backend = analysis.StandInLabel
			}
			alpha := report.FitAlpha(t, f.Alpha, strings.Join(f.Problems, "; "))
			t.Add(f.Key.Tier, report.OrDash(analysis.JoinNonEmpty("/", f.Key.Layout, f.Key.Copy, f.Key.Dtype)), backend,
				report.OrDash(analysis.JoinNonEmpty(" / ", f.Key.Transport, f.Key.Route(), f.Key.Sync, f.Key.AllLabel())), model, fmt.Sprint(f.N), report.FmtTokens(f.MinL)+" – "+report.FmtTokens(f.MaxL),
				alpha, rate, fmt.Sprintf("%.4f", f.R2))
		}
		t.Write(w)
	}
	listed := 0
	for _, s := range skipped {
		if strings.Contains(s, analysis.ErrNoOK) {
			continue // said under Not measured
		}
		fmt.Fprintf(w, "- not fitted: %s\n", s)
		listed++
	}
	if listed > 0 {
		fmt.Fprintln(w)
	}
	bes := analysis.BreakEvens(fits)
	if len(bes) == 0 {
		report.Paragraph(w, "Break-even prefixes need a recompute fit and a fetch fit on the same backend; these results have no such pair.")
		return
	}
	report.Paragraph(w, "Break-even prefix: below it recompute is cheaper than the fetch (searched token by token over the measured range, with the fitted models).")
	t := report.NewTable("fetch", tierspec.Recompute.Name, "break-even L")
	for _, b := range bes {
		t.Add(b.Fetch.Label(), b.Recompute.Label(), b.String())
	}
	t.Write(w)
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
	rows := results.Loads(report.AllRows(runs, Suite.Name)) // the headline is of loads
	keys, cells := analysis.SweepCells(rows)
	if len(keys) == 0 {
		return "", ""
	}
	best := analysis.BestConfigs(keys, cells)
	var ls []int64
	for _, c := range keys {
		ls = append(ls, c.L)
	}
	ls = report.PickL(ls, report.HeadlineL)
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
	t := report.NewTable(header...)
	t.Hoist, t.Inline = false, true
	grid := make([][]string, len(ls))
	for i, L := range ls {
		grid[i] = []string{report.FmtTokens(L)}
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
		t.Add(row...)
	}
	t.Add(append([]string{"break-even"}, breakEvenCells(t, rows, best)...)...)
	line := fmt.Sprintf("p50 time · GB/s (recompute: TFLOP/s) on each tier's fastest configuration (%s); break-even: the prefix from which a fetch is cheaper than recomputing it.",
		strings.Join(hows, "; "))
	line = analysis.JoinNonEmpty(" ", line, storeLine(report.AllRows(runs, Suite.Name), ls))
	if !slices.ContainsFunc(best, func(k analysis.SweepKey) bool { return !analysis.IsStandIn(k.Backend) }) {
		line = analysis.JoinNonEmpty(" ", line, referenceBeside())
	}
	return line, t.String()
}

// quickStartL is the prefix length of the README's question (a 32k
// prefix from CPU memory against recomputing it).
const quickStartL = 32768

// referenceBeside sets the reference's device figures beside a host
// stand-in's, which are not a GPU's, and says where a recompute figure
// can come from on a machine without one.
func referenceBeside() string {
	s := fmt.Sprintf("These are %s figures, not a GPU's; for comparison, %s:", analysis.StandIn, analysis.Reference)
	for _, r := range analysis.ReferenceTTFT {
		if r.L == quickStartL {
			s += fmt.Sprintf(" at %s a miss (recompute) %s against %s from CPU memory, %s× less,",
				report.FmtTokens(r.L), report.FmtSec(r.Miss), report.FmtSec(r.CPU), report.Sig(r.Miss/r.CPU))
		}
	}
	return s + fmt.Sprintf(" host-to-device PCIe %s GB/s. A recompute figure for this model can come from `kvtier probe --sim` (simulated, calibrated to that reference) or a GPU node.", report.Sig(analysis.ReferencePCIeGBps))
}

// tierColumn appends one tier's cells at each L to grid: time · rate;
// where it was not measured, the tier's fitted cost model's (in italics,
// noted as predicted), or a dash; one note for the column says why, per
// L where the reasons differ.
func tierColumn(t *report.Table, grid [][]string, k analysis.SweepKey, ls []int64, cells map[analysis.SweepCell][]results.Row, fit *analysis.Fit) {
	var why, at []string
	for i, L := range ls {
		rows := cells[analysis.SweepCell{SweepKey: k, L: L}]
		c := tierCell(k, rows)
		grid[i] = append(grid[i], c)
		if c == "" {
			why = append(why, cmp.Or(report.ReasonAt(rows), "not run at this L"))
			at = append(at, report.FmtTokens(L))
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
			k.Tier, report.FmtTokens(fit.MinL), report.FmtTokens(fit.MaxL), strings.TrimPrefix(note, k.Tier+" "))
	}
	for i, L := range ls {
		last := len(grid[i]) - 1
		switch {
		case grid[i][last] != "":
		case fit != nil && predictedCell(*fit, L) != "":
			grid[i][last] = predictedCell(*fit, L) + " " + t.Note(note)
		default:
			grid[i][last] = t.Dash(note)
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
	return "*" + report.FmtSec(sec) + " · " + report.Sig(rate) + "*"
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
		return report.FmtSec(d.P50)
	}
	return report.FmtSec(d.P50) + " · " + report.Sig(rate)
}

// breakEvenCells returns the break-even prefix of each configuration
// against the recompute one, or why there is none.
func breakEvenCells(t *report.Table, rows []results.Row, best []analysis.SweepKey) []string {
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
			out = append(out, t.Dash("break-even is each fetch tier's against recompute"))
			continue
		case ri < 0:
			out = append(out, t.Dash("no recompute configuration in the sweep"))
			continue
		}
		rc, rok := fitOf(best[ri])
		fe, fok := fitOf(k)
		switch {
		case !rok:
			out = append(out, t.Dash("no recompute fit: it needs two or more prefix lengths measured"))
		case !fok:
			out = append(out, t.Dash("no fit of this tier: it needs two or more prefix lengths measured"))
		case rc.Key.Backend != fe.Key.Backend:
			out = append(out, t.Dash("recompute was measured on another backend"))
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
		return report.Commas(b.L) + " tokens"
	case analysis.RecomputeWins:
		return "none up to " + report.FmtTokens(b.MaxL) + ": recompute cheaper"
	}
	return "none from " + report.FmtTokens(b.MinL) + ": fetch cheaper"
}

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
	sbest := analysis.BestConfigs(skeys, scells)
	p50 := func(cells map[analysis.SweepCell][]results.Row, k analysis.SweepKey, L int64) string {
		d := analysis.Summarize(analysis.Column(cells[analysis.SweepCell{SweepKey: k, L: L}], analysis.Seconds))
		if d.N == 0 {
			return report.Dash
		}
		return report.FmtSec(d.P50)
	}
	type pair struct{ load, store analysis.SweepKey }
	var pairs []pair
	var unmeasured []string
	for _, lk := range analysis.BestConfigs(lkeys, lcells) {
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
			return p50(scells, p.store, L) != report.Dash && p50(lcells, p.load, L) != report.Dash
		})
	}
	at, head := storeLengths(ls, skeys, bothWays)
	var parts []string
	for _, p := range pairs {
		var cells []string
		for _, L := range at {
			cells = append(cells, fmt.Sprintf("%s %s / %s", report.FmtTokens(L), p50(scells, p.store, L), p50(lcells, p.load, L)))
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
	at = report.PickL(stored, report.HeadlineL)
	return at, fmt.Sprintf("%s; at %s, the prefix lengths measured both ways, none of the headline's %s)", head, tokenList(at), tokenList(ls))
}

// tokenList formats prefix lengths as a comma-separated list.
func tokenList(ls []int64) string {
	s := make([]string, len(ls))
	for i, L := range ls {
		s[i] = report.FmtTokens(L)
	}
	return strings.Join(s, ", ")
}

// The sweep's report and figures: its table, the tier cost model fitted to it and
// the headline's tier table.
func init() {
	report.RegisterSection(report.Section{Suite: Suite.Name, Write: writeSweep, Figures: "sweep_"})
	report.RegisterSection(report.Section{Suite: Suite.Name, Title: "Tier cost model", Write: writeModel, Figures: "costmodel_"})
	report.RegisterHeadline(report.Headline{Suite: Suite.Name, Write: sweepHeadline})
	plots.Register(Suite.Name, drawSweep)
}
