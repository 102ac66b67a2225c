package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// A Section renders a suite's rows (or a model fitted to them) as
// Markdown under its own heading.
type Section struct {
	Suite string // the registered suite whose rows it reads
	Title string // "" takes the suite's title
	Write func(w io.Writer, r *analysis.Run)
	// Figures is the name prefix of the suite's figures shown after this
	// section; the figures no section claims follow the suite's last.
	Figures string
}

// sections are the sections with more to say than a suite's summary, in
// the order they follow each other within their suite.
var sections []Section

// RegisterSection adds a section for a suite; it is called from init
// functions of the files that render them. A suite without one gets its
// summary table.
func RegisterSection(s Section) { sections = append(sections, s) }

func init() {
	RegisterSection(Section{Suite: "probe", Write: writeProbe})
	RegisterSection(Section{Suite: "mb1", Write: writeMB1})
	RegisterSection(Section{Suite: "transfer", Write: writeTransfer})
}

// a section with its title resolved.
type titled struct {
	title   string
	write   func(io.Writer, *analysis.Run)
	figures string
}

// sectionsOf returns the sections of suite, or its summary table when it
// has none.
func sectionsOf(suite results.Suite) []titled {
	var out []titled
	for _, s := range sections {
		if s.Suite == suite.Name {
			t := s.Title
			if t == "" {
				t = suite.Title
			}
			out = append(out, titled{t, s.Write, s.Figures})
		}
	}
	if len(out) == 0 {
		out = append(out, titled{suite.Title, func(w io.Writer, r *analysis.Run) { writeSummary(w, suite, r) }, ""})
	}
	return out
}

// writeSummary is the section of a suite without one of its own: per
// configuration (the summary keys) n and the p50 and spread of its
// measurement.
func writeSummary(w io.Writer, suite results.Suite, r *analysis.Run) {
	f := suite.Main()
	cols := f.MatchColumns()
	keys, groups := analysis.GroupBy(r.Rows(suite.Name), func(x results.Row) string {
		return strings.Join(cellsOf(x, cols), "\x00")
	}, strings.Compare)
	metric := cmp.Or(f.Metric, "seconds")
	t := NewTable(append(append([]string{}, cols...), "n", metric+" p50", "p10–p90")...)
	for _, k := range keys {
		var xs []float64
		for _, x := range groups[k] {
			if v, ok := f.Measure(x); ok {
				xs = append(xs, v)
			}
		}
		d := analysis.Summarize(xs)
		cells := append(cellsOf(groups[k][0], cols), fmt.Sprint(d.N), Sig(d.P50), FmtRange(d.P10, d.P90, Sig))
		t.Add(cells...)
	}
	t.Write(w)
	fmt.Fprintln(w)
}

// cellsOf returns x's cells of cols.
func cellsOf(x results.Row, cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = x.Cell(c)
	}
	return out
}

// joinWhere lists places, saying a shared "L=" once: "L=1k, 2k, 4k".
func joinWhere(ws []string) string {
	all := true
	for _, x := range ws {
		all = all && strings.HasPrefix(x, "L=")
	}
	if !all {
		return strings.Join(ws, ", ")
	}
	out := slices.Clone(ws)
	for i := 1; i < len(out); i++ {
		out[i] = strings.TrimPrefix(out[i], "L=")
	}
	return strings.Join(out, ", ")
}

func OrDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return Dash
	}
	return s
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// Gaps collects the rows that hold no measurement, by status and reason,
// and under each the configurations and where (L, size) they were.
type Gaps struct {
	keys  []gapKey
	n     map[gapKey]int
	cfgs  map[gapKey][]string
	where map[gapKey]map[string][]string
}

type gapKey struct{ status, reason string }

// Add records the not-ok rows of one cell: configuration cfg at where.
func (g *Gaps) Add(cfg, where string, rows []results.Row) {
	if g.n == nil {
		g.n, g.cfgs, g.where = map[gapKey]int{}, map[gapKey][]string{}, map[gapKey]map[string][]string{}
	}
	for _, r := range rows {
		if r.Status == results.StatusOK {
			continue
		}
		k := gapKey{string(r.Status), analysis.ReasonOf(r)}
		if _, seen := g.n[k]; !seen {
			g.keys = append(g.keys, k)
			g.where[k] = map[string][]string{}
		}
		g.n[k]++
		if _, seen := g.where[k][cfg]; !seen {
			g.cfgs[k] = append(g.cfgs[k], cfg)
		}
		if where != "" && !slices.Contains(g.where[k][cfg], where) {
			g.where[k][cfg] = append(g.where[k][cfg], where)
		}
	}
}

// Write prints one item per status and reason with the configurations it
// hit, so that a reason shared by many cells is said once.
func (g *Gaps) Write(w io.Writer, what string) {
	if len(g.keys) == 0 {
		return
	}
	fmt.Fprintf(w, "Not measured (%s), by reason:\n\n", what)
	for _, k := range g.keys {
		fmt.Fprintf(w, "- %d %s: %s\n", g.n[k], k.status, k.reason)
		for _, c := range g.cfgs[k] {
			if ws := g.where[k][c]; len(ws) > 0 {
				fmt.Fprintf(w, "  - %s at %s\n", c, joinWhere(ws))
			} else {
				fmt.Fprintf(w, "  - %s\n", c)
			}
		}
	}
	fmt.Fprintln(w)
}

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
	cells, groups := analysis.ProbeDists(r.Rows("probe"))
	Paragraph(w, "TTFT in seconds: p50 (p90, n). Hits count only when the server's counters confirmed the tier; the ratios compare p50s.")
	t := NewTable(append(append([]string{"L", "source"}, tierspec.ProbeNames()...), probeRatioHeads()...)...)
	var unverified []string
	var g Gaps
	for _, lk := range probeLengths(cells) {
		src := "real server"
		if lk.Sim {
			src = "simulated"
		}
		row := []string{FmtTokens(lk.L), src}
		p50 := map[string]float64{}
		for _, tier := range tierspec.ProbeNames() {
			rows := groups[analysis.ProbeCell{Sim: lk.Sim, L: lk.L, Tier: tier}]
			g.Add(fmt.Sprintf("%s (%s)", tier, src), "L="+FmtTokens(lk.L), rows)
			cell, p, unver := probeTierCell(t, rows, fmt.Sprintf("%s L=%s (%s)", tier, FmtTokens(lk.L), src))
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
		fmt.Fprintf(w, "Unverified hits (the server's counters did not confirm the tier):\n\n%s\n\n", strings.Join(unverified, "\n"))
	}
	g.Write(w, "probe")
}

// probeTierCell formats one tier's cell of the probe table from its rows:
// the counted TTFT, its p50 (NaN if none) and, if some ok hits were not
// confirmed by the server's counters, a line for where naming them.
func probeTierCell(t *Table, rows []results.Row, where string) (cell string, p50 float64, unverified string) {
	nUnver := 0
	reasons := map[string]int{}
	for _, x := range rows {
		if analysis.OK(x) && !analysis.ProbeCounted(x) {
			nUnver++
			reasons[OrDash(x.Get(results.ColVerifyReason))]++
		}
	}
	d := analysis.CountedTTFT(rows)
	p50 = math.NaN()
	switch {
	case d.N > 0:
		p50 = d.P50
		cell = fmt.Sprintf("%s (%s, %d)", Sig(d.P50), Sig(d.P90), d.N)
	case len(rows) == 0:
		cell = t.Dash("not measured at this L")
	case nUnver > 0:
		cell = Dash
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

// mb1P50 is the p50 of col over rows and how many rows had it; NaN, 0 if none.
func mb1P50(rows []results.Row, col string) (float64, int) {
	d := analysis.Summarize(analysis.Column(rows, func(x results.Row) float64 { return x.Float(col) }))
	if d.N == 0 {
		return math.NaN(), 0
	}
	return d.P50, d.N
}

func writeMB1(w io.Writer, r *analysis.Run) {
	cells, groups := analysis.GroupBy(r.Rows("mb1"), mb1ArmOf, func(a, b mb1ArmCell) int {
		return cmp.Or(analysis.CompareBool(a.Sim, b.Sim), cmp.Compare(a.Chunk, b.Chunk), cmp.Compare(a.D, b.D), cmp.Compare(a.P, b.P), cmp.Compare(a.Arm, b.Arm))
	})
	Paragraph(w, "Interference arm: p50 over reps. Effective TPOT during = prefill TTFT / (tokens during / D); penalty = that / base TPOT. The control arm sends the prefill elsewhere.")
	t := NewTable("D", "P", "chunk", "source", "n", "base TPOT ms", "prefill TTFT ms", "tokens/stream during", "eff. TPOT ms", "penalty", "control penalty")
	var g Gaps
	for _, c := range cells {
		g.Add(fmt.Sprintf("%s arm", OrDash(c.Arm)), fmt.Sprintf("D=%d P=%s", c.D, FmtTokens(int64(c.P))), groups[c])
		if c.Arm != "interfere" {
			continue
		}
		if _, n := mb1P50(groups[c], results.ColPenalty); n == 0 {
			continue
		}
		t.Add(mb1Row(t, c.mb1Cell, groups[c], groups[mb1ArmCell{c.mb1Cell, "control"}])...)
	}
	if t.Len() == 0 {
		Paragraph(w, "No interference cell has an ok rep.")
	} else {
		t.Write(w)
	}
	g.Write(w, "mb1")
}

// mb1Row is the table row of interference cell c from its interfere and
// control arms' rows; the interfere arm has at least one penalty.
func mb1Row(t *Table, c mb1Cell, rows, ctrl []results.Row) []string {
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
	return []string{fmt.Sprint(c.D), Commas(int64(c.P)), chunk, src, fmt.Sprint(n),
		val(results.ColBaseTPOT, FmtMS), val(results.ColPrefillTTFT, FmtMS), val(results.ColTokensPerStreamDuring, Sig),
		val(results.ColEffTPOT, FmtMS), Sig(pen) + "×", ctrlCell}
}

// mb1Control is the control penalty cell from the control arm's rows.
func mb1Control(t *Table, ctrl []results.Row) string {
	cp, cn := mb1P50(ctrl, results.ColPenalty)
	switch {
	case cn > 0:
		return fmt.Sprintf("%s× (n=%d)", Sig(cp), cn)
	case len(ctrl) > 0:
		return t.Dash("control arm has no ok rep (see Not measured)")
	default:
		return t.Dash("control arm not run for this cell")
	}
}

type transferCell struct {
	Path, Transport, Device, Layout, Src, Dst string
	Bytes                                     int64
	Direction                                 string // "" for a load, as in SweepKey
}

func writeTransfer(w io.Writer, r *analysis.Run) {
	keys, groups := analysis.GroupBy(r.Rows("transfer"), func(x results.Row) transferCell {
		return transferCell{x.Get(results.ColPath), x.Transport, x.Get(results.ColDevice), x.Layout, x.Get(results.ColSrcMem), x.Get(results.ColDstMem), x.Bytes, analysis.StoreOrEmpty(x)}
	}, func(a, b transferCell) int {
		return cmp.Or(cmp.Compare(a.Direction, b.Direction), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Transport, b.Transport), cmp.Compare(a.Device, b.Device),
			cmp.Compare(a.Layout, b.Layout), cmp.Compare(a.Src, b.Src), cmp.Compare(a.Dst, b.Dst), cmp.Compare(a.Bytes, b.Bytes))
	})
	Paragraph(w, "GB/s = payload bytes / time (1 GB = 10⁹ B). Time for 3 GiB and 11.5 GiB is extrapolated from each rep's rate (p50 over reps).")
	t := NewTable("path", "transport", "device", "layout", "mem", "size", "n", "GB/s p50", "GB/s p10–p90", "line frac", "time p50", "time p99", "3 GiB p50", "11.5 GiB p50")
	var g Gaps
	for _, k := range keys {
		rows := groups[k]
		g.Add(analysis.JoinNonEmpty(" ", k.Path, k.Transport, k.Device, k.Layout), FmtBytes(float64(k.Bytes)), rows)
		sec := analysis.Summarize(analysis.Column(rows, analysis.Seconds))
		if sec.N == 0 {
			continue
		}
		g := analysis.Summarize(analysis.Column(rows, analysis.GBps))
		frac := transferLineFrac(t, rows, g)
		extrap := func(col string, size float64) string { return transferExtrap(t, rows, col, size) }
		path := analysis.JoinNonEmpty(" ", k.Path, k.Direction)
		if k.Path == "" {
			path = analysis.JoinNonEmpty(" ", t.Dash("path not recorded"), k.Direction)
		}
		mem := k.Src + "→" + k.Dst
		if k.Src == "" && k.Dst == "" {
			mem = t.Dash("memory kinds not recorded")
		}
		gb, gbr := Sig(g.P50), FmtRange(g.P10, g.P90, Sig)
		if g.N == 0 {
			gb = t.Dash("no bytes recorded")
			gbr = gb
		}
		t.Add(path, OrDash(k.Transport), OrDash(k.Device), OrDash(k.Layout), mem, FmtBytes(float64(k.Bytes)), fmt.Sprint(sec.N),
			gb, gbr, frac, FmtSec(sec.P50), FmtSec(sec.P99), extrap(results.ColT3GiB, 3*(1<<30)), extrap(results.ColT11_5GiB, 11.5*(1<<30)))
	}
	if t.Len() == 0 {
		Paragraph(w, "No ok rows in transfer.csv.")
	} else {
		t.Write(w)
	}
	g.Write(w, "transfer")
}

// transferLineFrac is the fraction of the line rate that g's p50 reached.
func transferLineFrac(t *Table, rows []results.Row, g analysis.Dist) string {
	if line := analysis.Summarize(analysis.Column(rows, func(x results.Row) float64 { return x.Float(results.ColLineGBPerSecond) })); line.N > 0 && line.P50 > 0 && g.N > 0 {
		return fmt.Sprintf("%.2f", g.P50/line.P50)
	}
	return t.Dash("line rate unknown (line_gb_per_s empty)")
}

// transferExtrap is the p50 time to move size bytes: col where the row
// recorded it, else extrapolated from the row's rate.
func transferExtrap(t *Table, rows []results.Row, col string, size float64) string {
	d := analysis.Summarize(analysis.Column(rows, func(x results.Row) float64 {
		if v := x.Float(col); !math.IsNaN(v) {
			return v
		}
		if x.GBps > 0 {
			return size / (x.GBps * 1e9)
		}
		return math.NaN()
	}))
	if d.N == 0 {
		return t.Dash("no rate to extrapolate from")
	}
	return FmtSec(d.P50)
}
