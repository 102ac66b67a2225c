package mb1

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
)

type mb1Cell struct {
	Sim   bool
	Chunk string
	D, P  int
}

// mb1ArmCell is one arm of one interference cell.
type mb1ArmCell struct {
	mb1Cell
	Arm string
}

func mb1ArmOf(x results.Row) mb1ArmCell {
	return mb1ArmCell{mb1Cell{x.Get(results.ColSimulated) == "true", x.Get(results.ColChunkLabel), analysis.Atoi(x.Get(results.ColDecodeStreams)), analysis.Atoi(x.Get(results.ColPrefillTokens))}, x.Get(results.ColArm)}
}

// mb1P50 is the p50 of col over rows and how many rows had it; NaN, 0 if
// none. Rows the simulator lagged in (analysis.Lagged) are left out.
func mb1P50(rows []results.Row, col string) (float64, int) {
	d := analysis.Summarize(analysis.Column(analysis.Unlagged(rows), func(x results.Row) float64 { return x.Float(col) }))
	if d.N == 0 {
		return math.NaN(), 0
	}
	return d.P50, d.N
}

func writeMB1(w io.Writer, r *analysis.Run) {
	cells, groups := analysis.GroupBy(r.Rows(Suite.Name), mb1ArmOf, func(a, b mb1ArmCell) int {
		return cmp.Or(analysis.CompareBool(a.Sim, b.Sim), cmp.Compare(a.Chunk, b.Chunk), cmp.Compare(a.D, b.D), cmp.Compare(a.P, b.P), cmp.Compare(a.Arm, b.Arm))
	})
	report.Paragraph(w, "Interference arm: p50 over reps. Effective TPOT during = prefill TTFT / (tokens during / D); penalty = that / base TPOT. The control arm sends the prefill elsewhere.")
	t := report.NewTable("D", "P", "chunk", "source", "n", "base TPOT ms", "prefill TTFT ms", "tokens/stream during", "eff. TPOT ms", "penalty", "control penalty")
	var g report.Gaps
	for _, c := range cells {
		g.Add(fmt.Sprintf("%s arm", report.OrDash(c.Arm)), fmt.Sprintf("D=%d P=%s", c.D, report.FmtTokens(int64(c.P))), groups[c])
		if c.Arm != "interfere" {
			continue
		}
		if _, n := mb1P50(groups[c], results.ColPenalty); n == 0 {
			continue
		}
		t.Add(mb1Row(t, c.mb1Cell, groups[c], groups[mb1ArmCell{c.mb1Cell, "control"}])...)
	}
	if t.Len() == 0 {
		report.Paragraph(w, "No interference cell has an ok rep.")
	} else {
		t.Write(w)
	}
	report.WriteLaggedOut(w, len(r.Rows(Suite.Name))-len(analysis.Unlagged(r.Rows(Suite.Name))), analysis.MaxSimLag, "the prefill TTFT they measure")
	g.Write(w, Suite.Name)
}

// mb1Row is the table row of interference cell c from its interfere and
// control arms' rows; the interfere arm has at least one penalty.
func mb1Row(t *report.Table, c mb1Cell, rows, ctrl []results.Row) []string {
	pen, n := mb1P50(rows, results.ColPenalty)
	src := "real server"
	if c.Sim {
		src = "simulated"
	}
	chunk := c.Chunk
	if chunk == "" {
		chunk = t.Dash("chunked-prefill size not given")
	}
	val := func(col string, f func(float64) string) string {
		v, _ := mb1P50(rows, col)
		if s := f(v); s != "" {
			return s
		}
		return t.Dash("not recorded in this run")
	}
	ctrlCell := mb1Control(t, ctrl)
	return []string{fmt.Sprint(c.D), report.Commas(int64(c.P)), chunk, src, fmt.Sprint(n),
		val(results.ColBaseTPOT, report.FmtMS), val(results.ColPrefillTTFT, report.FmtMS), val(results.ColTokensPerStreamDuring, report.Sig),
		val(results.ColEffTPOT, report.FmtMS), report.Sig(pen) + "×", ctrlCell}
}

// mb1Control is the control penalty cell from the control arm's rows.
func mb1Control(t *report.Table, ctrl []results.Row) string {
	cp, cn := mb1P50(ctrl, results.ColPenalty)
	switch {
	case cn > 0:
		return fmt.Sprintf("%s× (n=%d)", report.Sig(cp), cn)
	case len(ctrl) > 0:
		return t.Dash("control arm has no ok rep (see Not measured)")
	default:
		return t.Dash("control arm not run for this cell")
	}
}

// mb1Headline is MB1's penalty at the largest prefill per D, with the
// control arm's beside it; a real server's rows before the simulator's.
func mb1Headline(runs []*analysis.Run) (string, string) {
	type cell struct {
		D, P int
		arm  string
	}
	rows := report.AllRows(runs, Suite.Name)
	sim := !slices.ContainsFunc(rows, func(r results.Row) bool { return analysis.OK(r) && r.Get(results.ColSimulated) != "true" })
	pen := map[cell][]float64{}
	var ds []int
	for _, r := range rows {
		if !analysis.OK(r) || analysis.Lagged(r) || (r.Get(results.ColSimulated) == "true") != sim {
			continue
		}
		c := cell{analysis.Atoi(r.Get(results.ColDecodeStreams)), analysis.Atoi(r.Get(results.ColPrefillTokens)), r.Get(results.ColArm)}
		pen[c] = append(pen[c], r.Float(results.ColPenalty))
		if c.arm == "interfere" && !slices.Contains(ds, c.D) {
			ds = append(ds, c.D)
		}
	}
	slices.Sort(ds)
	var parts []string
	for _, d := range ds {
		p := 0
		for c, v := range pen {
			if c.D == d && c.arm == "interfere" && analysis.Summarize(v).N > 0 {
				p = max(p, c.P)
			}
		}
		if p == 0 {
			continue
		}
		s := fmt.Sprintf("D=%d, P=%s: %s×", d, report.Commas(int64(p)), report.Sig(analysis.Summarize(pen[cell{d, p, "interfere"}]).P50))
		if c := analysis.Summarize(pen[cell{d, p, "control"}]); c.N > 0 {
			s += fmt.Sprintf(" (control %s×)", report.Sig(c.P50))
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no interference cell has an ok rep; " + report.StatusCounts(rows), ""
	}
	return "decode penalty (effective / base TPOT, p50) at the largest prefill per D: " + strings.Join(parts, "; ") + ".", ""
}

// MB1's report and figures: its interference table and the headline's penalties.
func init() {
	report.RegisterSection(report.Section{Suite: Suite.Name, Write: writeMB1})
	report.RegisterHeadline(report.Headline{Suite: Suite.Name, Write: mb1Headline})
	plots.Register(Suite.Name, drawMB1)
}
