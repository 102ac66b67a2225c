package probe

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// sweepSuite is the device sweep, whose fetch times the predictions add
// to the probe's GPU hits.
const sweepSuite = "sweep"

// probeLength is one row of the probe table: a prompt length, real or simulated.
type probeLength struct {
	Sim bool
	L   int64
}

// probeLengths lists the lengths of cells in order, each once.
func probeLengths(cells []analysis.ProbeCell) []probeLength {
	var ls []probeLength
	for _, c := range cells {
		k := probeLength{c.Sim, c.L}
		if !slices.Contains(ls, k) {
			ls = append(ls, k)
		}
	}
	return ls
}

func writeProbe(w io.Writer, r *analysis.Run) {
	cells, groups := analysis.ProbeDists(r.Rows(Suite.Name))
	report.Paragraph(w, "TTFT in seconds: p50 (p90, n). Hits count only when the server's counters confirmed the tier; the ratios compare p50s.")
	t := report.NewTable(append(append([]string{"L", "source"}, tierspec.ProbeNames()...), probeRatioHeads()...)...)
	var unverified []string
	var g report.Gaps
	for _, lk := range probeLengths(cells) {
		src := "real server"
		if lk.Sim {
			src = "simulated"
		}
		row := []string{report.FmtTokens(lk.L), src}
		p50 := map[string]float64{}
		for _, tier := range tierspec.ProbeNames() {
			rows := groups[analysis.ProbeCell{Sim: lk.Sim, L: lk.L, Tier: tier}]
			g.Add(fmt.Sprintf("%s (%s)", tier, src), "L="+report.FmtTokens(lk.L), rows)
			cell, p, unver := probeTierCell(t, rows, fmt.Sprintf("%s L=%s (%s)", tier, report.FmtTokens(lk.L), src))
			p50[tier] = p
			if unver != "" {
				unverified = append(unverified, unver)
			}
			row = append(row, cell)
		}
		t.Add(append(row, tierRatios(t, p50)...)...)
	}
	t.Write(w)
	if len(unverified) > 0 {
		fmt.Fprintf(w, "Unverified rows, left out of the numbers (the server's counters did not confirm the tier, its figures were impossible, or the simulator fell behind real time by more than 10 %% of the TTFT):\n\n%s\n\n", strings.Join(unverified, "\n"))
	}
	g.Write(w, Suite.Name)
}

// probeTierCell formats one tier's cell of the probe table from its rows:
// the counted TTFT, its p50 (NaN if none) and, if some ok hits were not
// confirmed by the server's counters, a line for where naming them.
func probeTierCell(t *report.Table, rows []results.Row, where string) (cell string, p50 float64, unverified string) {
	nUnver := 0
	reasons := map[string]int{}
	for _, x := range rows {
		if analysis.OK(x) && !analysis.ProbeCounted(x) {
			nUnver++
			reasons[report.OrDash(x.Get(results.ColVerifyReason))]++
		}
	}
	d := analysis.CountedTTFT(rows)
	p50 = math.NaN()
	switch {
	case d.N > 0:
		p50 = d.P50
		cell = fmt.Sprintf("%s (%s, %d)", report.Sig(d.P50), report.Sig(d.P90), d.N)
	case len(rows) == 0:
		cell = t.Dash("not measured at this L")
	case nUnver > 0:
		cell = report.Dash
	default:
		cell = t.Dash("no ok sample (see Not measured)")
	}
	if nUnver == 0 {
		return cell, p50, ""
	}
	cell += " " + t.Note("unverified hits excluded from the numbers; counted below")
	var rs []string
	for k, v := range reasons {
		rs = append(rs, fmt.Sprintf("%d: %s", v, k))
	}
	slices.Sort(rs)
	return cell, p50, fmt.Sprintf("- %s: %d unverified hit row(s) — %s", where, nUnver, strings.Join(rs, "; "))
}

// probeHeadline is the four-tier TTFT table: p50 per tier at the
// longest prefixes probed (the reference's where measured), with the
// ratios of neighbouring tiers; a real server's rows before the
// simulator's.
func probeHeadline(runs []*analysis.Run) (string, string) {
	cells, groups := analysis.ProbeDists(report.AllRows(runs, Suite.Name))
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
	t := report.NewTable(append(append([]string{"L"}, tierspec.ProbeNames()...), probeRatioHeads()...)...)
	t.Hoist, t.Inline = false, true
	for _, L := range report.PickL(ls, report.HeadlineL) {
		row := []string{report.FmtTokens(L)}
		p50 := map[string]float64{}
		for _, tier := range tierspec.ProbeNames() {
			rows := groups[analysis.ProbeCell{Sim: sim, L: L, Tier: tier}]
			d := analysis.CountedTTFT(rows)
			p50[tier] = d.P50
			switch {
			case d.N > 0:
				row = append(row, report.FmtSec(d.P50))
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
// remote/cpu, cpu/gpu, miss/cpu.
func probeRatioHeads() []string {
	var out []string
	for _, pr := range probePairs() {
		out = append(out, pr[0]+"/"+pr[1])
	}
	return out
}

// probePairs are the neighbouring HTTP tiers, slower first, then the
// quick start's question: a miss against a CPU-offload hit.
func probePairs() [][2]string {
	names := tierspec.ProbeNames()
	var out [][2]string
	for i := 1; i < len(names); i++ {
		out = append(out, [2]string{names[i-1], names[i]})
	}
	return append(out, [2]string{names[0], tierCPU})
}

// tierRatios returns the ratios of neighbouring HTTP tiers' p50s
// (miss/remote, remote/cpu, cpu/gpu) and miss/cpu.
func tierRatios(t *report.Table, p50 map[string]float64) []string {
	var out []string
	for _, pr := range probePairs() {
		v := report.FmtRatio(p50[pr[0]], p50[pr[1]])
		if v == "" {
			v = t.Dash("a side of the ratio was not measured")
		}
		out = append(out, v)
	}
	return out
}

func writePredictions(w io.Writer, runs []*analysis.Run) {
	var preds []analysis.Prediction
	var pairs int
	for _, s := range runs {
		if len(s.Rows(sweepSuite)) == 0 {
			continue
		}
		for _, p := range runs {
			if len(p.Rows(Suite.Name)) == 0 {
				continue
			}
			pairs++
			preds = append(preds, analysis.Predict(s.Rows(sweepSuite), p.Rows(Suite.Name))...)
		}
	}
	if pairs == 0 {
		return // the missing suite is already said
	}
	report.Paragraph(w, "## Predicted vs measured hit TTFT")
	if len(preds) == 0 {
		report.Paragraph(w, "No prefix length has both a verified GPU hit and a verified cpu or remote hit with a device-level fetch of the matching tier (host for cpu, remote for remote) at that L, so the model cannot be tested on these results.")
		return
	}
	report.Paragraph(w, "Model: hit TTFT = GPU-hit TTFT + device-level fetch time at the same L (cpu ← host tier, remote ← remote tier). A large error means the fetch is not what the server pays on a hit.")
	t := report.NewTable("L", "hit tier", "device fetch", "GPU TTFT", "fetch", "predicted", "measured", "error")
	for _, p := range preds {
		tier := p.Tier
		if p.Sim {
			tier += " (simulated)"
		}
		fetch := report.FmtSec(p.Fetch)
		if p.FetchFrom == "model" {
			fetch += " " + t.Note("no sweep sample at this L: fitted model")
		}
		errPct := report.FmtPct(p.ErrPct)
		if math.IsNaN(p.ErrPct) {
			errPct = t.Dash("measured TTFT is zero")
		}
		dev := p.Device.Label()
		if analysis.IsStandIn(p.Device.Backend) {
			dev += " " + t.Note("device fetch measured on the host stand-in (a CPU copy, not PCIe or RDMA into a GPU): the test of the model is illustrative only")
		}
		t.Add(report.FmtTokens(p.L), tier, dev, report.FmtSec(p.GPU), fetch, report.FmtSec(p.Predicted), report.FmtSec(p.Measured), errPct)
	}
	t.Write(w)
}

// The probe's report and figures: its TTFT table, the headline's four-tier TTFT and,
// after every suite, its hit TTFTs predicted from the sweep's fetches.
func init() {
	report.RegisterSection(report.Section{Suite: Suite.Name, Write: writeProbe})
	report.RegisterHeadline(report.Headline{Suite: Suite.Name, Write: probeHeadline})
	report.RegisterClosing(writePredictions)
	plots.Register(Suite.Name, drawProbe)
	harness.RegisterCostProbe(planCosts)
}
