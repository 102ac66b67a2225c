package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// meshHeadline is the mesh's intra- against inter-node pairs at the
// largest size: the median over the pairs of each pair's p50 GB/s.
func meshHeadline(runs []*analysis.Run) (string, string) {
	keys, stats := analysis.MeshCells(AllRows(runs, "mesh"))
	var size int64
	for _, k := range keys {
		if k.Route == "net" && stats[k].N > 0 {
			size = max(size, k.Bytes)
		}
	}
	if size == 0 {
		return "no pair has an ok row; " + StatusCounts(AllRows(runs, "mesh")), ""
	}
	vals := map[string][]float64{}
	var pairs, layouts []string
	for _, k := range keys {
		st := stats[k]
		if k.Route != "net" || k.Bytes != size || st.N == 0 {
			continue
		}
		if _, seen := vals[st.Pair]; !seen {
			pairs = append(pairs, st.Pair)
		}
		vals[st.Pair] = append(vals[st.Pair], st.GBps)
		if !slices.Contains(layouts, k.Layout) {
			layouts = append(layouts, k.Layout)
		}
	}
	var parts []string
	for _, p := range pairs {
		parts = append(parts, fmt.Sprintf("%s %s GB/s (median of %d pairs' p50)", OrDash(p), Sig(analysis.Summarize(vals[p]).P50), len(vals[p])))
	}
	return fmt.Sprintf("at %s (%s): %s. %s: intra %s, inter %s GB/s.", FmtBytes(float64(size)), strings.Join(layouts, ", "),
		strings.Join(parts, ", "), analysis.Reference, Sig(analysis.ReferenceMB2["intra"]), Sig(analysis.ReferenceMB2["inter"])), ""
}

// traceHeadline is each trace's APC ceiling and LRU knee.
func traceHeadline(runs []*analysis.Run) (string, string) {
	var parts []string
	for _, f := range byTrace(AllRows(runs, "trace")) {
		s := fmt.Sprintf("`%s`: APC ceiling %s", f.name, OrDash(FmtShare(f.value("apc_ceiling_any", ""))))
		var knee results.Row
		for _, r := range f.rows {
			if r.Get(results.ColMetric) == "knee95" && r.Status == results.StatusOK && (knee.Status == "" || r.Get(results.ColInstances) == "1") {
				knee = r
			}
		}
		if knee.Status != "" {
			s += fmt.Sprintf(", 95 %% of it from %s of KV per instance (%s instance(s), LRU model)", FmtBytes(float64(knee.Bytes)), knee.Get(results.ColInstances))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ") + ".", ""
}

// planHeadline is the planner's recommendation: of the capacity
// configurations, the smallest (total bytes over the tiers) whose
// predicted TTFT p90 is within 10 % of the best; where no TTFT could be
// predicted, the smallest within one point of the best prefix hit.
func planHeadline(runs []*analysis.Run) (string, string) {
	rows := AllRows(runs, "plan")
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
		lead = fmt.Sprintf("the smallest configuration within 10 %% of the best predicted TTFT p90 (%s)", FmtSec(best))
		within = func(r results.Row) bool { return ttft(r) <= 1.1*best }
		better = func(a, b results.Row) bool { return ttft(a) < ttft(b) }
	} else {
		best := extreme(rows, hit, 1)
		lead = fmt.Sprintf("TTFT not predicted (no usable cost for %s%s); the smallest configuration within 1 point of the best predicted prefix hit (%s)",
			strings.ReplaceAll(OrDash(rows[0].Get(results.ColMissing)), ";", ", "), missingWhy(runs), FmtShare(best))
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
	what := "prefix hit " + OrDash(FmtShare(hit(pick)))
	if v := ttft(pick); !math.IsNaN(v) {
		what = "TTFT p90 " + FmtSec(v) + ", " + what
	}
	return fmt.Sprintf("%s is %s: %s (%s).", lead, strings.Join(caps, ", "), what, planProvenance(pick)), ""
}

// planProvenance says what a plan row's figures rest on: the LRU model,
// the costs' source and directory (a mix said as one), and how much of
// the prediction is extrapolated or past the limit.
func planProvenance(r results.Row) string {
	src := OrDash(r.Get(results.ColCostSource))
	if strings.Contains(src, " + ") {
		src = "mixed sources: " + src
	}
	s := fmt.Sprintf("predicted by the LRU model from %s costs in `%s`", src, r.Get(results.ColCosts))
	if x := r.Float(results.ColExtrapolated); x > 0 {
		s += fmt.Sprintf("; %s of the requests extrapolated past the longest prefix measured, up to %g×", FmtShare(x), analysis.ExtrapolationLimit)
	}
	if x := r.Float(results.ColPastLimit); x > 0 {
		s += fmt.Sprintf("; %s past that, counted, not predicted", FmtShare(x))
	}
	return s
}

// missingWhy is why the plan's costs could not be used, from
// plan_costs.csv: the first reason given, after a colon; "" when none.
func missingWhy(runs []*analysis.Run) string {
	for _, run := range runs {
		for _, r := range run.FileWith("plan", results.ColAlpha) {
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

// kneeHeadline is the capacity knee: where the realized APC reaches 95 %
// of its largest, the TTFT p90 there and how far it fell, the working
// set beside it.
func kneeHeadline(runs []*analysis.Run) (string, string) {
	var rows []results.Row
	for _, r := range runs {
		rows = append(rows, runRows(r, "knee")...)
	}
	if len(rows) == 0 {
		return "", ""
	}
	k, err := ShapeOfKnee(rows)
	if err != nil {
		return "no knee: " + err.Error() + ".", ""
	}
	kr := k.Rows[k.Knee]
	s := fmt.Sprintf("the realized APC reaches 95 %% of its largest (%s) at %s GB of GPU KV, TTFT p90 %s there, %s× below the smallest capacity's",
		FmtShare(k.Rows[len(k.Rows)-1].Float(results.ColAPC)), OrDash(FmtGB(kr.Float(results.ColCapacityBytes))), FmtSec(kr.Float(results.ColTTFTP90)), Sig(k.TTFTFall))
	if ws := kr.Float(results.ColWorkingSetBytes); !math.IsNaN(ws) {
		s += fmt.Sprintf("; working set %s GB (%s)", FmtGB(ws), analysis.Predicted)
	}
	return s + ".", ""
}

// replayHeadline is each replay's realized APC against the LRU model's
// and its TTFT percentiles.
func replayHeadline(runs []*analysis.Run) (string, string) {
	var parts []string
	for _, r := range runs {
		for _, x := range runRows(r, "replay") {
			parts = append(parts, fmt.Sprintf("`%s`: realized APC %s (%s: %s), TTFT p50 %s, p90 %s", x.Get(results.ColTrace),
				OrDash(FmtShare(x.Float(results.ColAPC))), analysis.Predicted, OrDash(FmtShare(x.Float(results.ColPredictedAPC))),
				OrDash(FmtSec(x.Float(results.ColTTFTP50))), OrDash(FmtSec(x.Float(results.ColTTFTP90)))))
		}
	}
	if len(parts) == 0 {
		return "", ""
	}
	return strings.Join(parts, "; ") + ".", ""
}
