package trace

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/units"
)

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

// writeTrace writes the trace section of a results directory: per trace
// its requests, lengths and footprint, the APC ceiling and its reuse
// split, the LRU knees (predicted by the LRU model) and working sets.
func writeTrace(w io.Writer, run *analysis.Run) {
	for _, f := range byTrace(run.Rows(Suite.Name)) {
		first := f.rows[0]
		fmt.Fprintf(w, "#### Trace `%s`\n\n", f.name)
		fmt.Fprintf(w, "%s format, %s tokens per hash id, model %s; %s.\n\n", first.Get(results.ColFormat), first.Get(results.ColBlockTokens), report.OrDash(first.Model), methodSentence(first))
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
	return fmt.Sprintf("SHARDS sampling (Waldspurger et al., FAST'15) of %s of the blocks in 8 hash-partitioned sub-samples: hit ratios within ±%s points (95 %%: t for 7 degrees of freedom times the standard error of the token-weighted sub-samples, plus the curve's rise over one sub-sample slot, the largest over capacities; the block opening each request tracked exactly), capacities below 8/rate blocks not resolved",
		report.FmtShare(r.Float(results.ColSampleRate)), report.Sig(r.Float(results.ColErrorPP)))
}

func writeTraceCounts(w io.Writer, f traceFigures) {
	sess := report.Commas(int64(f.value("sessions", "")))
	if r, ok := f.row("sessions", ""); ok && r.Get(results.ColNote) != "" {
		sess = "unknown (" + r.Get(results.ColNote) + ")"
	}
	fmt.Fprintf(w, "- %s requests, sessions: %s, over %s; %s block references, %s distinct\n",
		report.Commas(int64(f.value("requests", ""))), sess, report.FmtSec(f.value("span", "")),
		report.Commas(int64(f.value("block_refs", ""))), report.Commas(int64(f.value("distinct_blocks", ""))))
	if r, ok := f.row("malformed_lines", ""); ok && r.Float(results.ColValue) > 0 {
		fmt.Fprintf(w, "- %s\n", r.Get(results.ColNote))
	}
	if v := f.value("top1pct_sessions_input_share", ""); !math.IsNaN(v) {
		fmt.Fprintf(w, "- the top 1 %% of sessions send %s of the input tokens\n", report.FmtShare(v))
	}
	fmt.Fprintln(w)
}

func writeTraceLengths(w io.Writer, f traceFigures) {
	t := report.NewTable("per request", "mean", "p50", "p90", "p99", "max")
	for _, m := range []struct {
		metric, label string
		format        func(float64) string
	}{
		{"input_tokens", "input tokens", func(v float64) string { return report.Commas(int64(math.Round(v))) }},
		{"output_tokens", "output tokens", func(v float64) string { return report.Commas(int64(math.Round(v))) }},
		{"kv_footprint", "KV footprint of the input", report.FmtBytes},
		{"think", "gap to the parent request", report.FmtSec},
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
		report.FmtShare(f.value("apc_ceiling_any", "")), report.OrDash(report.FmtShare(f.value("apc_ceiling_intra", ""))))
	if v := f.value("reuse_intra", ""); !math.IsNaN(v) {
		note := ""
		if r, ok := f.row("reuse_shared", ""); ok {
			note = " (" + r.Get(results.ColNote) + ")"
		}
		fmt.Fprintf(w, " Its hits split into intra-session %s, cross-session %s, shared prefix %s%s.",
			report.FmtShare(v), report.FmtShare(f.value("reuse_cross", "")), report.FmtShare(f.value("reuse_shared", "")), note)
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
	t := report.NewTable(heads...)
	for _, r := range f.rows {
		if r.Get(results.ColMetric) != metrics[0] {
			continue
		}
		cells := []string{r.Get(results.ColInstances), report.OrDash(r.Get(results.ColRoute))}
		for _, m := range metrics {
			k, _ := f.row(m, "", results.ColInstances, r.Get(results.ColInstances), results.ColRoute, r.Get(results.ColRoute))
			if k.Status != results.StatusOK {
				cells = append(cells, t.Dash(report.OrDash(k.Reason)), report.Dash)
				continue
			}
			cells = append(cells, report.FmtBytes(float64(k.Bytes)), report.Commas(k.PrefixTokens))
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
	for _, f := range byTrace(run.Rows(Suite.Name)) {
		var parts []string
		for _, m := range kneeMetrics(f.rows) {
			if k, ok := f.row(m, "", results.ColInstances, "1"); ok && k.Status == results.StatusOK {
				parts = append(parts, fmt.Sprintf("%s %% of it at %s", strings.TrimPrefix(m, "knee"), report.FmtBytes(float64(k.Bytes))))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "`%s`: APC ceiling %s; one cache reaches %s (LRU model, **predicted**).\n\n", f.name, report.FmtShare(f.value("apc_ceiling_any", "")), strings.Join(parts, ", "))
		}
	}
}

func writeTraceWindows(w io.Writer, f traceFigures) {
	var ws []string
	for _, r := range f.rows {
		if r.Get(results.ColMetric) == "working_set_peak" {
			ws = append(ws, fmt.Sprintf("%s in %s windows", report.FmtBytes(r.Float(results.ColValue)), report.FmtSec(r.Float(results.ColWindow))))
		}
	}
	if len(ws) > 0 {
		fmt.Fprintf(w, "Working set (distinct KV referenced in a sliding window, whole blocks), peak: %s.\n\n", strings.Join(ws, ", "))
	}
}

// writePlan writes the plan section: the tier costs used (or why a tier
// has none) and, per capacity configuration, the share of tokens each
// tier serves and the predicted KV-load time and TTFT.
func writePlan(w io.Writer, run *analysis.Run) {
	plan := run.Rows(PlanSuite.Name)
	if len(plan) == 0 {
		return
	}
	first := plan[0]
	mode := "exclusive (a block lives in one tier; a tier's capacity adds to the faster ones')"
	if first.Get(results.ColInclusive) == "true" {
		mode = "inclusive (write-through: each tier holds the most recent blocks that fit it)"
	}
	fmt.Fprintf(w, "Every figure here is **predicted**: the trace's LRU stack distances (touch %s) combined with tier costs measured in `%s` (**%s**). Tiers are %s; a hit is the leading run of blocks some tier holds, each block served by the fastest tier holding it, the rest recomputed.\n\n",
		first.Get(results.ColTouch), first.Get(results.ColCosts), report.OrDash(first.Get(results.ColCostSource)), mode)
	writePlanKnees(w, run)
	writePlanAnswer(w, plan)
	writePlanCheck(w, run.Files[PlanCheckFile])
	writePlanCosts(w, run.FileWith(PlanSuite.Name, results.ColAlpha))
	t := report.NewTable(planHeads()...)
	for _, r := range gridRows(plan) {
		cells := []string{r.Get(results.ColTrace)}
		for _, tier := range tierspec.CapacityNames() {
			cells = append(cells, fmtCapacity(r.Get(tier+"_bytes")))
		}
		cells = append(cells, report.FmtShare(r.Float(results.ColHitRatio)))
		for _, tier := range tierspec.PlanNames() {
			cells = append(cells, report.FmtShare(r.Float("frac_"+tier)))
		}
		load := []string{report.FmtSec(r.Float(results.ColLoadP50)), report.FmtSec(r.Float(results.ColLoadP90))}
		if ex := r.Get(results.ColLoadExcludes); ex != "" {
			n := t.Note("excludes the fetches from " + strings.ReplaceAll(ex, ";", ", ") + ": no measured cost (a lower bound)")
			load[0], load[1] = load[0]+" "+n, load[1]+" "+n
		}
		cells = append(cells, load...)
		cells = append(cells, ttftCells(t, r, "mean", "p50", "p90", "p99")...)
		t.Add(append(cells, planWrites(t, r))...)
	}
	t.Write(w)
}

// ttftCells are a plan row's predicted TTFT at each of stats ("p90"),
// footnoted with the share of requests extrapolated or past the limit,
// or a dash that says why there is none.
func ttftCells(t *report.Table, r results.Row, stats ...string) []string {
	extrap := ""
	if x := r.Float(results.ColExtrapolated); x > 0 {
		extrap = " " + t.Note(fmt.Sprintf("extrapolated: %s of the requests are predicted from a cost past the longest prefix it was measured at (plan_costs.csv max_tokens), along the fit's form, up to %g× that length", report.FmtShare(x), analysis.ExtrapolationLimit))
	}
	if x := r.Float(results.ColPastLimit); x > 0 {
		extrap += " " + t.Note(fmt.Sprintf("%s of the requests need a cost past %g× the longest prefix measured: counted, not predicted, left out of these percentiles", report.FmtShare(x), analysis.ExtrapolationLimit))
	}
	var cells []string
	for _, s := range stats {
		v := r.Float("ttft_" + s + "_s")
		switch {
		case !math.IsNaN(v):
			cells = append(cells, report.FmtSec(v)+extrap)
		case r.Get(results.ColMissing) != "":
			cells = append(cells, t.Dash("not predicted: no measured cost for "+strings.ReplaceAll(r.Get(results.ColMissing), ";", ", ")))
		default:
			cells = append(cells, t.Dash("the costs give no TTFT"))
		}
	}
	return cells
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
func planWrites(t *report.Table, r results.Row) string {
	var parts []string
	for _, tier := range tierspec.CapacityNames() {
		bps := r.Float("write_" + tier + "_Bps")
		if !(bps > 0) {
			continue
		}
		use := "not checked"
		if u := r.Float("store_util_" + tier); !math.IsNaN(u) {
			use = report.FmtShare(u)
			if u > 1 {
				use = "**over: " + use + "**"
			}
		}
		parts = append(parts, fmt.Sprintf("%s %s/s (%s)", tier, report.FmtBytes(bps), use))
	}
	if len(parts) == 0 {
		return report.Dash
	}
	cell := strings.Join(parts, ", ")
	if r.Get(results.ColStoreUnchecked) != "" {
		cell += " " + t.Note("not checked: the costs have no store rows (direction=store) for that tier")
	}
	return cell
}

// storeCell is a plan tier's measured store: fixed cost and bandwidth.
func storeCell(t *report.Table, r results.Row) string {
	rate := r.Float(results.ColStoreRate)
	if tierspec.Computes(r.Tier) {
		return report.Dash
	}
	if math.IsNaN(rate) {
		return t.Dash("store not measured (no direction=store rows): its writes are not checked")
	}
	return report.FmtSec(r.Float(results.ColStoreAlpha)) + " + " + report.Sig(rate/1e9) + " GB/s"
}

// writePlanCosts lists the cost of every plan tier, or why it is
// missing: the fit's form, intercept, rate or coefficients, R² and the
// range of prefix lengths measured, and its source.
func writePlanCosts(w io.Writer, rows []results.Row) {
	if len(rows) == 0 {
		return
	}
	t := report.NewTable("tier", "cost", "source", "measured configuration", "intercept", "rate / coefficients", "R²", "measured L", "store")
	var missing []string
	for _, r := range rows {
		if r.Get(results.ColMeasured) != "true" {
			t.Add(r.Tier, t.Dash(r.Reason), report.OrDash(r.Get(results.ColSource)), report.Dash, report.Dash, report.Dash, report.Dash, measuredRange(r), storeCell(t, r))
			missing = append(missing, r.Tier)
			continue
		}
		alpha := report.FitAlpha(t, r.Float(results.ColAlpha), r.Get(results.ColFitProblem))
		t.Add(r.Tier, r.Get(results.ColFormula), r.Get(results.ColSource), r.Get(results.ColConfig), alpha, rateCell(r),
			report.OrDash(fixed3(r.Float("r2"))), measuredRange(r), storeCell(t, r))
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
			return report.Sig(rate/1e12) + " TFLOP/s"
		}
		return report.Sig(rate/1e9) + " GB/s"
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
		return report.Dash
	}
	s := report.FmtTokens(int64(lo))
	if hi != lo {
		s += "–" + report.FmtTokens(int64(hi))
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
	return report.FmtBytes(n)
}

// traceHeadline is each trace's APC ceiling and LRU knee.
func traceHeadline(runs []*analysis.Run) (string, string) {
	var parts []string
	for _, f := range byTrace(report.AllRows(runs, Suite.Name)) {
		s := fmt.Sprintf("`%s`: APC ceiling %s", f.name, report.OrDash(report.FmtShare(f.value("apc_ceiling_any", ""))))
		parts = append(parts, s+knee95Headline(f.rows))
	}
	return strings.Join(parts, "; ") + ".", ""
}

// knee95Headline is the LRU model's 95 % knee for one instance (else
// the first configuration's), and beside it each routed configuration's
// (kvtier trace --instances N --route R), which the headline hid.
func knee95Headline(rows []results.Row) string {
	var knees []results.Row
	for _, r := range rows {
		if r.Get(results.ColMetric) == "knee95" && r.Status == results.StatusOK {
			knees = append(knees, r)
		}
	}
	if len(knees) == 0 {
		return ""
	}
	first := slices.IndexFunc(knees, func(r results.Row) bool { return r.Get(results.ColInstances) == "1" })
	first = max(first, 0)
	n, _ := strconv.Atoi(knees[first].Get(results.ColInstances))
	s := fmt.Sprintf(", 95 %% of it from %s of KV per instance (%s", report.FmtBytes(float64(knees[first].Bytes)), units.Count(n, "instance", "instances"))
	for i, r := range knees {
		if i != first {
			s += fmt.Sprintf("; %s instances routed by %s: %s each", r.Get(results.ColInstances), report.OrDash(r.Get(results.ColRoute)), report.FmtBytes(float64(r.Bytes)))
		}
	}
	return s + "; LRU model)"
}

// planHeadline is the planner's recommendation: of the capacity
// configurations, the smallest (total bytes over the tiers) whose
// predicted TTFT p90 is within 10 % of the best; where no TTFT could be
// predicted, the smallest within one point of the best prefix hit.
func planHeadline(runs []*analysis.Run) (string, string) {
	all := report.AllRows(runs, PlanSuite.Name)
	if s := answerHeadline(all); s != "" {
		var checks []results.Row
		for _, run := range runs {
			checks = append(checks, run.Files[PlanCheckFile]...)
		}
		return s + checkClause(checks), ""
	}
	rows := gridRows(all)
	if len(rows) == 0 {
		return "", ""
	}
	ttft := func(r results.Row) float64 { return r.Float(results.ColTTFTP90) }
	hit := func(r results.Row) float64 { return r.Float(results.ColHitRatio) }
	var lead string
	var within func(results.Row) bool
	var better func(a, b results.Row) bool
	if slices.ContainsFunc(rows, func(r results.Row) bool { return !math.IsNaN(ttft(r)) }) {
		best := extreme(rows, ttft, -1)
		lead = fmt.Sprintf("the smallest configuration within 10 %% of the best predicted TTFT p90 (%s)", report.FmtSec(best))
		within = func(r results.Row) bool { return ttft(r) <= 1.1*best }
		better = func(a, b results.Row) bool { return ttft(a) < ttft(b) }
	} else {
		best := extreme(rows, hit, 1)
		lead = fmt.Sprintf("TTFT not predicted (no usable cost for %s%s); the smallest configuration within 1 point of the best predicted prefix hit (%s)",
			strings.ReplaceAll(report.OrDash(rows[0].Get(results.ColMissing)), ";", ", "), missingWhy(runs), report.FmtShare(best))
		within = func(r results.Row) bool { return hit(r) >= best-0.01 }
		better = func(a, b results.Row) bool { return hit(a) > hit(b) }
	}
	var pick results.Row
	size := math.Inf(1)
	for _, r := range rows {
		if c := planCapacity(r); within(r) && (pick.Extra == nil || c < size || (c == size && better(r, pick))) {
			pick, size = r, c
		}
	}
	var caps []string
	for _, tier := range tierspec.CapacityNames() {
		if c := fmtCapacity(pick.Get(tier + "_bytes")); c != "" && c != "0" {
			caps = append(caps, tier+" "+c)
		}
	}
	what := "prefix hit " + report.OrDash(report.FmtShare(hit(pick)))
	if v := ttft(pick); !math.IsNaN(v) {
		what = "TTFT p90 " + report.FmtSec(v) + ", " + what
	}
	return fmt.Sprintf("%s is %s: %s (%s).", lead, strings.Join(caps, ", "), what, planProvenance(pick)), ""
}

// planProvenance says what a plan row's figures rest on: the LRU model,
// the costs' source and directory (a mix said as one), and how much of
// the prediction is extrapolated or past the limit.
func planProvenance(r results.Row) string {
	src := r.Get(results.ColCostSource)
	if strings.Contains(src, " + ") {
		src = "mixed sources: " + src
	}
	s := fmt.Sprintf("predicted by the LRU model from %s costs in `%s`", src, r.Get(results.ColCosts))
	if src == "" {
		s = fmt.Sprintf("predicted by the LRU model; no usable cost in `%s`", r.Get(results.ColCosts))
	}
	if x := r.Float(results.ColExtrapolated); x > 0 {
		s += fmt.Sprintf("; %s of the requests extrapolated past the longest prefix measured, up to %g×", report.FmtShare(x), analysis.ExtrapolationLimit)
	}
	if x := r.Float(results.ColPastLimit); x > 0 {
		s += fmt.Sprintf("; %s past that, counted, not predicted", report.FmtShare(x))
	}
	return s
}

// missingWhy is why the plan's costs could not be used, from
// plan_costs.csv: the first reason given, after a colon; "" when none.
func missingWhy(runs []*analysis.Run) string {
	for _, run := range runs {
		for _, r := range run.FileWith(PlanSuite.Name, results.ColAlpha) {
			if r.Get(results.ColMeasured) != "true" && r.Reason != "" && r.Get(results.ColSource) != "" {
				return ": " + r.Tier + " " + r.Reason
			}
		}
	}
	return ""
}

// extreme returns the largest (sign 1) or smallest (sign -1) finite
// value of v over rows, NaN when none is finite.
func extreme(rows []results.Row, v func(results.Row) float64, sign float64) float64 {
	best := math.NaN()
	for _, r := range rows {
		if x := v(r); !math.IsNaN(x) && (math.IsNaN(best) || sign*x > sign*best) {
			best = x
		}
	}
	return best
}

// planCapacity returns the bytes of every tier of a plan row ("inf" is
// +Inf).
func planCapacity(r results.Row) float64 {
	total := 0.0
	for _, tier := range tierspec.CapacityNames() {
		s := r.Get(tier + "_bytes")
		if s == "inf" {
			return math.Inf(1)
		}
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			total += v
		}
	}
	return total
}

// The trace's and the plan's sections, headlines and figures.
func init() {
	report.RegisterSection(report.Section{Suite: Suite.Name, Write: writeTrace})
	report.RegisterSection(report.Section{Suite: PlanSuite.Name, Write: writePlan})
	report.RegisterHeadline(report.Headline{Suite: Suite.Name, Write: traceHeadline})
	report.RegisterHeadline(report.Headline{Suite: PlanSuite.Name, Write: planHeadline})
	plots.Register(Suite.Name, drawTrace)
	plots.Register(PlanSuite.Name, drawPlan)
}
