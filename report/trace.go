package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

func init() {
	RegisterSection(Section{Suite: "trace", Write: WriteTrace})
	RegisterSection(Section{Suite: "plan", Write: WritePlan})
}

// traceFigures indexes one trace's rows of trace.csv by metric and stat.
type traceFigures struct {
	name string
	rows []results.Row
}

func (f traceFigures) row(metric, stat string, match ...string) (results.Row, bool) {
	for _, r := range f.rows {
		if r.Get(results.ColMetric) != metric || r.Get(results.ColStat) != stat {
			continue
		}
		good := true
		for i := 0; i+1 < len(match); i += 2 {
			good = good && r.Get(match[i]) == match[i+1]
		}
		if good {
			return r, true
		}
	}
	return results.Row{}, false
}

func (f traceFigures) value(metric, stat string) float64 {
	r, ok := f.row(metric, stat)
	if !ok {
		return math.NaN()
	}
	return r.Float(results.ColValue)
}

// byTrace splits rows by their trace column, in order of first
// appearance.
func byTrace(rows []results.Row) []traceFigures {
	var out []traceFigures
	for _, r := range rows {
		i := slices.IndexFunc(out, func(f traceFigures) bool { return f.name == r.Get(results.ColTrace) })
		if i < 0 {
			out = append(out, traceFigures{name: r.Get(results.ColTrace)})
			i = len(out) - 1
		}
		out[i].rows = append(out[i].rows, r)
	}
	return out
}

// WriteTrace writes the trace section of a results directory: per trace
// its requests, lengths and footprint, the APC ceiling and its reuse
// split, the LRU knees (predicted by the LRU model) and working sets.
func WriteTrace(w io.Writer, run *analysis.Run) {
	for _, f := range byTrace(run.Rows("trace")) {
		first := f.rows[0]
		fmt.Fprintf(w, "#### Trace `%s`\n\n", f.name)
		fmt.Fprintf(w, "%s format, %s tokens per hash id, model %s; %s.\n\n", first.Get(results.ColFormat), first.Get(results.ColBlockTokens), OrDash(first.Model), methodSentence(first))
		writeTraceCounts(w, f)
		writeTraceLengths(w, f)
		writeTraceReuse(w, f)
		writeTraceKnees(w, f)
		writeTraceWindows(w, f)
	}
}

func methodSentence(r results.Row) string {
	if r.Get(results.ColMethod) == "exact" {
		return "exact analysis (every block tracked)"
	}
	return fmt.Sprintf("SHARDS sampling (Waldspurger et al., FAST'15) of %s of the blocks in 8 hash-partitioned sub-samples: hit ratios within ±%s points (95 %%: t for 7 degrees of freedom times the standard error of the token-weighted sub-samples, the largest over capacities; the block opening each request tracked exactly), capacities below 8/rate blocks not resolved",
		FmtShare(r.Float(results.ColSampleRate)), Sig(r.Float(results.ColErrorPP)))
}

func writeTraceCounts(w io.Writer, f traceFigures) {
	sess := Commas(int64(f.value("sessions", "")))
	if r, ok := f.row("sessions", ""); ok && r.Get(results.ColNote) != "" {
		sess = "unknown (" + r.Get(results.ColNote) + ")"
	}
	fmt.Fprintf(w, "- %s requests, sessions: %s, over %s; %s block references, %s distinct\n",
		Commas(int64(f.value("requests", ""))), sess, FmtSec(f.value("span", "")),
		Commas(int64(f.value("block_refs", ""))), Commas(int64(f.value("distinct_blocks", ""))))
	if r, ok := f.row("malformed_lines", ""); ok && r.Float(results.ColValue) > 0 {
		fmt.Fprintf(w, "- %s\n", r.Get(results.ColNote))
	}
	if v := f.value("top1pct_sessions_input_share", ""); !math.IsNaN(v) {
		fmt.Fprintf(w, "- the top 1 %% of sessions send %s of the input tokens\n", FmtShare(v))
	}
	fmt.Fprintln(w)
}

func writeTraceLengths(w io.Writer, f traceFigures) {
	t := NewTable("per request", "mean", "p50", "p90", "p99", "max")
	for _, m := range []struct {
		metric, label string
		format        func(float64) string
	}{
		{"input_tokens", "input tokens", func(v float64) string { return Commas(int64(math.Round(v))) }},
		{"output_tokens", "output tokens", func(v float64) string { return Commas(int64(math.Round(v))) }},
		{"kv_footprint", "KV footprint of the input", FmtBytes},
		{"think", "gap to the parent request", FmtSec},
	} {
		cells := []string{m.label}
		for _, s := range []string{"mean", "p50", "p90", "p99", "max"} {
			v := f.value(m.metric, s)
			if math.IsNaN(v) {
				cells = append(cells, t.Dash("no request has a parent"))
				continue
			}
			cells = append(cells, m.format(v))
		}
		t.Add(cells...)
	}
	t.Write(w)
}

func writeTraceReuse(w io.Writer, f traceFigures) {
	fmt.Fprintf(w, "APC ceiling with an infinite cache (tokens in the leading run of blocks seen before): **%s any session**, %s within the session.",
		FmtShare(f.value("apc_ceiling_any", "")), OrDash(FmtShare(f.value("apc_ceiling_intra", ""))))
	if v := f.value("reuse_intra", ""); !math.IsNaN(v) {
		note := ""
		if r, ok := f.row("reuse_shared", ""); ok {
			note = " (" + r.Get(results.ColNote) + ")"
		}
		fmt.Fprintf(w, " Its hits split into intra-session %s, cross-session %s, shared prefix %s%s.",
			FmtShare(v), FmtShare(f.value("reuse_cross", "")), FmtShare(f.value("reuse_shared", "")), note)
	} else {
		fmt.Fprint(w, " The trace has no sessions, so its hits are not split by session.")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
}

func writeTraceKnees(w io.Writer, f traceFigures) {
	touch := f.rows[0].Get(results.ColTouch)
	metrics := kneeMetrics(f.rows)
	if len(metrics) == 0 {
		return
	}
	var shares []string
	for _, m := range metrics {
		shares = append(shares, strings.TrimPrefix(m, "knee")+" %")
	}
	fmt.Fprintf(w, "LRU capacity knees, **predicted** by the LRU model (a request's blocks looked up at arrival, the hit is the leading run present, then its blocks touched %s): the smallest capacity per instance reaching %s of the ceiling.\n\n", touch, strings.Join(shares, ", "))
	heads := []string{"instances", "router"}
	for _, s := range shares {
		heads = append(heads, "knee "+s, "tokens")
	}
	t := NewTable(heads...)
	for _, r := range f.rows {
		if r.Get(results.ColMetric) != metrics[0] {
			continue
		}
		cells := []string{r.Get(results.ColInstances), OrDash(r.Get(results.ColRoute))}
		for _, m := range metrics {
			k, _ := f.row(m, "", results.ColInstances, r.Get(results.ColInstances), results.ColRoute, r.Get(results.ColRoute))
			if k.Status != results.StatusOK {
				cells = append(cells, t.Dash(OrDash(k.Reason)), Dash)
				continue
			}
			cells = append(cells, FmtBytes(float64(k.Bytes)), Commas(k.PrefixTokens))
		}
		t.Add(cells...)
	}
	t.Write(w)
}

// kneeMetrics returns the knee metrics of trace.csv rows ("knee50",
// "knee90", ...) in the order they first appear: ascending, as trace
// writes them.
func kneeMetrics(rows []results.Row) []string {
	var out []string
	for _, r := range rows {
		if m := r.Get(results.ColMetric); strings.HasPrefix(m, "knee") && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// writePlanKnees writes one line of the trace's LRU knees for a plan:
// the single cache's capacity reaching each share of the ceiling.
func writePlanKnees(w io.Writer, run *analysis.Run) {
	for _, f := range byTrace(run.Rows("trace")) {
		var parts []string
		for _, m := range kneeMetrics(f.rows) {
			if k, ok := f.row(m, "", results.ColInstances, "1"); ok && k.Status == results.StatusOK {
				parts = append(parts, fmt.Sprintf("%s %% of it at %s", strings.TrimPrefix(m, "knee"), FmtBytes(float64(k.Bytes))))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "`%s`: APC ceiling %s; one cache reaches %s (LRU model, **predicted**).\n\n", f.name, FmtShare(f.value("apc_ceiling_any", "")), strings.Join(parts, ", "))
		}
	}
}

func writeTraceWindows(w io.Writer, f traceFigures) {
	var ws []string
	for _, r := range f.rows {
		if r.Get(results.ColMetric) == "working_set_peak" {
			ws = append(ws, fmt.Sprintf("%s in %s windows", FmtBytes(r.Float(results.ColValue)), FmtSec(r.Float(results.ColWindow))))
		}
	}
	if len(ws) > 0 {
		fmt.Fprintf(w, "Working set (distinct KV referenced in a sliding window, whole blocks), peak: %s.\n\n", strings.Join(ws, ", "))
	}
}

// WritePlan writes the plan section: the tier costs used (or why a tier
// has none) and, per capacity configuration, the share of tokens each
// tier serves and the predicted KV-load time and TTFT.
func WritePlan(w io.Writer, run *analysis.Run) {
	plan := run.Rows("plan")
	if len(plan) == 0 {
		return
	}
	first := plan[0]
	mode := "exclusive (a block lives in one tier; a tier's capacity adds to the faster ones')"
	if first.Get(results.ColInclusive) == "true" {
		mode = "inclusive (write-through: each tier holds the most recent blocks that fit it)"
	}
	fmt.Fprintf(w, "Every figure here is **predicted**: the trace's LRU stack distances (touch %s) combined with tier costs measured in `%s` (**%s**). Tiers are %s; a hit is the leading run of blocks some tier holds, each block served by the fastest tier holding it, the rest recomputed.\n\n",
		first.Get(results.ColTouch), first.Get(results.ColCosts), OrDash(first.Get(results.ColCostSource)), mode)
	writePlanKnees(w, run)
	writePlanCosts(w, run.FileWith("plan", results.ColAlpha))
	t := NewTable(planHeads()...)
	for _, r := range plan {
		cells := []string{r.Get(results.ColTrace)}
		for _, tier := range tierspec.CapacityNames() {
			cells = append(cells, fmtCapacity(r.Get(tier+"_bytes")))
		}
		cells = append(cells, FmtShare(r.Float(results.ColHitRatio)))
		for _, tier := range tierspec.PlanNames() {
			cells = append(cells, FmtShare(r.Float("frac_"+tier)))
		}
		load := []string{FmtSec(r.Float(results.ColLoadP50)), FmtSec(r.Float(results.ColLoadP90))}
		if ex := r.Get(results.ColLoadExcludes); ex != "" {
			n := t.Note("excludes the fetches from " + strings.ReplaceAll(ex, ";", ", ") + ": no measured cost (a lower bound)")
			load[0], load[1] = load[0]+" "+n, load[1]+" "+n
		}
		cells = append(cells, load...)
		extrap := ""
		if x := r.Float(results.ColExtrapolated); x > 0 {
			extrap = " " + t.Note(fmt.Sprintf("extrapolated: %s of the requests are predicted from a cost past the longest prefix it was measured at (plan_costs.csv max_tokens), along the fit's form, up to %g× that length", FmtShare(x), analysis.ExtrapolationLimit))
		}
		if x := r.Float(results.ColPastLimit); x > 0 {
			extrap += " " + t.Note(fmt.Sprintf("%s of the requests need a cost past %g× the longest prefix measured: counted, not predicted, left out of these percentiles", FmtShare(x), analysis.ExtrapolationLimit))
		}
		for _, s := range []string{"mean", "p50", "p90", "p99"} {
			v := r.Float("ttft_" + s + "_s")
			switch {
			case !math.IsNaN(v):
				cells = append(cells, FmtSec(v)+extrap)
			case r.Get(results.ColMissing) != "":
				cells = append(cells, t.Dash("not predicted: no measured cost for "+strings.ReplaceAll(r.Get(results.ColMissing), ";", ", ")))
			default:
				cells = append(cells, t.Dash("the costs give no TTFT"))
			}
		}
		t.Add(append(cells, planWrites(t, r))...)
	}
	t.Write(w)
}

// planHeads are the headers of the plan table: each tier's capacity,
// the hit, each tier's share of the tokens, the predictions.
func planHeads() []string {
	heads := []string{"trace"}
	for _, d := range tierspec.Capacities() {
		heads = append(heads, d.Plan.Label)
	}
	heads = append(heads, "hit")
	for _, d := range tierspec.PlanTiers() {
		heads = append(heads, d.Plan.Share)
	}
	return append(heads, "pred. load p50", "pred. load p90", "pred. TTFT mean", "p50", "p90", "p99", "writes (of measured store)")
}

// planWrites is a plan row's write cell: per tier written to, the bytes/s
// it must absorb and the share of its measured store that needs, "over"
// past 100 %, "not checked" without a measured store.
func planWrites(t *Table, r results.Row) string {
	var parts []string
	for _, tier := range tierspec.CapacityNames() {
		bps := r.Float("write_" + tier + "_Bps")
		if !(bps > 0) {
			continue
		}
		use := "not checked"
		if u := r.Float("store_util_" + tier); !math.IsNaN(u) {
			use = FmtShare(u)
			if u > 1 {
				use = "**over: " + use + "**"
			}
		}
		parts = append(parts, fmt.Sprintf("%s %s/s (%s)", tier, FmtBytes(bps), use))
	}
	if len(parts) == 0 {
		return Dash
	}
	cell := strings.Join(parts, ", ")
	if r.Get(results.ColStoreUnchecked) != "" {
		cell += " " + t.Note("not checked: the costs have no store rows (direction=store) for that tier")
	}
	return cell
}

// FitAlpha is a fit's α cell: a negative fixed cost is a fit problem,
// not a cost, so the cell is a dash that says so; other problems (a poor
// R²) are noted beside α.
func FitAlpha(t *Table, alpha float64, problems string) string {
	switch {
	case strings.Contains(problems, "negative fixed cost"):
		return t.Dash("fit problem: " + problems)
	case problems != "":
		return FmtSec(alpha) + " " + t.Note("fit problem: "+problems)
	}
	return FmtSec(alpha)
}

// storeCell is a plan tier's measured store: fixed cost and bandwidth.
func storeCell(t *Table, r results.Row) string {
	rate := r.Float(results.ColStoreRate)
	if tierspec.Computes(r.Tier) {
		return Dash
	}
	if math.IsNaN(rate) {
		return t.Dash("store not measured (no direction=store rows): its writes are not checked")
	}
	return FmtSec(r.Float(results.ColStoreAlpha)) + " + " + Sig(rate/1e9) + " GB/s"
}

// writePlanCosts lists the cost of every plan tier, or why it is
// missing: the fit's form, intercept, rate or coefficients, R² and the
// range of prefix lengths measured, and its source.
func writePlanCosts(w io.Writer, rows []results.Row) {
	if len(rows) == 0 {
		return
	}
	t := NewTable("tier", "cost", "source", "measured configuration", "intercept", "rate / coefficients", "R²", "measured L", "store")
	var missing []string
	for _, r := range rows {
		if r.Get(results.ColMeasured) != "true" {
			t.Add(r.Tier, t.Dash(r.Reason), OrDash(r.Get(results.ColSource)), Dash, Dash, Dash, Dash, measuredRange(r), storeCell(t, r))
			missing = append(missing, r.Tier)
			continue
		}
		alpha := FitAlpha(t, r.Float(results.ColAlpha), r.Get(results.ColFitProblem))
		t.Add(r.Tier, r.Get(results.ColFormula), r.Get(results.ColSource), r.Get(results.ColConfig), alpha, rateCell(r),
			OrDash(fixed3(r.Float("r2"))), measuredRange(r), storeCell(t, r))
	}
	t.Write(w)
	if len(missing) > 0 {
		fmt.Fprintf(w, "Missing tier costs: %s. They are not filled in: a configuration that needs one has no predicted TTFT.\n\n", strings.Join(missing, ", "))
	}
}

// rateCell is a plan cost's rate (α + bytes/rate, α + FLOPs/rate) or its
// growth coefficients (C + A·L + B·L²).
func rateCell(r results.Row) string {
	if rate := r.Float(results.ColRate); !math.IsNaN(rate) {
		if r.Get(results.ColRateUnit) == "FLOP/s" {
			return Sig(rate/1e12) + " TFLOP/s"
		}
		return Sig(rate/1e9) + " GB/s"
	}
	return fmt.Sprintf("A %s s/token, B %s s/token²", sci(r.Float(results.ColLinear)), sci(r.Float(results.ColQuadratic)))
}

// sci renders a coefficient with three significant digits, "0" for 0.
func sci(x float64) string {
	if x == 0 {
		return "0"
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// fixed3 renders an R² with three decimals, "" for NaN.
func fixed3(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

// measuredRange is the prefix lengths a cost was measured over, with the
// count of points.
func measuredRange(r results.Row) string {
	lo, hi := r.Float("min_tokens"), r.Float("max_tokens")
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return Dash
	}
	s := FmtTokens(int64(lo))
	if hi != lo {
		s += "–" + FmtTokens(int64(hi))
	}
	return s + " (" + r.Get("n") + " points)"
}

// fmtCapacity renders a capacity cell of plan.csv: bytes or "inf".
func fmtCapacity(s string) string {
	if s == "inf" || s == "" {
		return s
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	if n == 0 {
		return "0"
	}
	return FmtBytes(n)
}
