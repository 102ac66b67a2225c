package trace

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// writePlanAnswer writes the answer to the capacity question: per tier
// configuration, the capacity reaching each share of the APC ceiling
// and the TTFT it buys, beside the same configuration without that tier;
// a sentence per capacity of the first tier at the checked share first.
func writePlanAnswer(w io.Writer, plan []results.Row) {
	var knees []results.Row
	for _, r := range plan {
		if r.Get(ColRole) == RoleKnee {
			knees = append(knees, r)
		}
	}
	if len(knees) == 0 {
		return
	}
	src := costsLabel(knees[0])
	for _, r := range knees {
		if r.Float(ColKnee) == checkShare && r.Get(ColSizedTier) == CapacityTiers[1] {
			fmt.Fprintf(w, "**%s**\n\n", answerSentence(r, without(plan, r)))
		}
	}
	fmt.Fprintf(w, "Capacity per share of the achievable prefix hit ratio (the APC ceiling): capacities and hits from the trace's LRU model (**predicted**); TTFT **predicted** from the costs of %s.\n\n", src)
	t := report.NewTable("tier sized", "beside", "share of ceiling", "capacity", "hit", "TTFT p50", "p90", "p99", "without it", "hit ", "p50 ", "p90 ", "p99 ")
	t.Hoist = false
	for _, r := range knees {
		wo := without(plan, r)
		tier := r.Get(ColSizedTier)
		cells := []string{tierLabel(tier), beside(r, tier), report.FmtShare(r.Float(ColKnee)),
			fmtCapacity(r.Get(tier + "_bytes")), report.FmtShare(r.Float(results.ColHitRatio))}
		cells = append(cells, ttftCells(t, r, "p50", "p90", "p99")...)
		if wo == nil {
			t.Add(append(cells, report.Dash, report.Dash, report.Dash, report.Dash, report.Dash)...)
			continue
		}
		cells = append(cells, withoutLabel(*wo, tier), report.FmtShare(wo.Float(results.ColHitRatio)))
		t.Add(append(cells, ttftCells(t, *wo, "p50", "p90", "p99")...)...)
	}
	t.Write(w)
}

// answerSentence answers the question directly: the second tier's
// capacity reaching a share of the ceiling beside the first tier's, and
// its TTFT p90 with and without it, and what they rest on.
func answerSentence(r results.Row, wo *results.Row) string {
	tier := r.Get(ColSizedTier)
	s := fmt.Sprintf("%s of the achievable prefix hit ratio (%s hit) %s: %s %s (LRU model, predicted)",
		report.FmtShare(r.Float(ColKnee)), report.FmtShare(r.Float(results.ColHitRatio)), beside(r, tier), tierLabel(tier), fmtCapacity(r.Get(tier+"_bytes")))
	p90 := r.Float(results.ColTTFTP90)
	if math.IsNaN(p90) {
		return s + "; TTFT not predicted (no usable cost for " + strings.ReplaceAll(report.OrDash(r.Get(results.ColMissing)), ";", ", ") + ")."
	}
	s += fmt.Sprintf("; TTFT p90 %s with it", report.FmtSec(p90))
	if wo != nil && !math.IsNaN(wo.Float(results.ColTTFTP90)) {
		s += fmt.Sprintf(", %s without (%s hit)", report.FmtSec(wo.Float(results.ColTTFTP90)), report.FmtShare(wo.Float(results.ColHitRatio)))
	}
	return s + " (" + planProvenance(r) + ")."
}

// answerHeadline is the plan's headline where it answered the capacity
// question with a TTFT: the sentence for the largest capacity of the
// first tier; "" where it did not (the grid's headline then says why no
// TTFT is predicted and what to run).
func answerHeadline(rows []results.Row) string {
	best := -1
	for i, r := range rows {
		if r.Get(ColRole) == RoleKnee && r.Float(ColKnee) == checkShare && r.Get(ColSizedTier) == CapacityTiers[1] &&
			(best < 0 || r.Float(CapacityTiers[0]+"_bytes") > rows[best].Float(CapacityTiers[0]+"_bytes")) {
			best = i
		}
	}
	if best < 0 || math.IsNaN(rows[best].Float(results.ColTTFTP90)) {
		return ""
	}
	return answerSentence(rows[best], without(rows, rows[best]))
}

// checkClause says in a sentence how the self-check's knee row came out:
// predicted beside realized hit and TTFT p90, or why it did not run; ""
// where there is no such row.
func checkClause(checks []results.Row) string {
	for _, r := range checks {
		if r.Get(ColRole) != RoleKnee && r.Get(ColRole) != RoleServer {
			continue
		}
		if r.Status != results.StatusOK {
			return " Self-check not run: " + r.Reason + "."
		}
		against := map[string]string{RoleKnee: "kvtier sim (virtual clock)", RoleServer: "the server"}[r.Get(ColRole)]
		return fmt.Sprintf(" Self-check on %s against %s: hit %s predicted, %s realized; TTFT p90 %s predicted, %s realized.",
			r.Get(ColSample), against, report.FmtShare(r.Float(ColPredictedHit)), report.FmtShare(r.Float(ColRealizedHit)),
			report.FmtSec(r.Float(ColPredictedP90)), report.FmtSec(r.Float(results.ColTTFTP90)))
	}
	return ""
}

// gridRows are the rows of the capacity flags' grid: plan.csv less the
// answer's configurations (all of a plan written before them).
func gridRows(rows []results.Row) []results.Row {
	var out []results.Row
	for _, r := range rows {
		if role := r.Get(ColRole); role == "" || role == RoleGrid {
			out = append(out, r)
		}
	}
	return out
}

// costsLabel names the costs a plan row's TTFT rests on: where they
// were measured and what they are ("kvtier sim, virtual clock",
// simulated).
func costsLabel(r results.Row) string {
	return fmt.Sprintf("`%s` (%s)", r.Get(results.ColCosts), report.OrDash(r.Get(results.ColCostSource)))
}

// without returns the plan row of r's configuration without the tier r
// sized; nil when the plan has none.
func without(plan []results.Row, r results.Row) *results.Row {
	tier := r.Get(ColSizedTier)
	for i, o := range plan {
		if o.Get(ColRole) != RoleWithout || o.Get(ColSizedTier) != tier {
			continue
		}
		if tier == CapacityTiers[0] || o.Get(CapacityTiers[0]+"_bytes") == r.Get(CapacityTiers[0]+"_bytes") {
			return &plan[i]
		}
	}
	return nil
}

// tierLabel is a plan tier's label ("DRAM").
func tierLabel(tier string) string {
	if d, ok := tierspec.Lookup(tier); ok && d.Plan != nil {
		return d.Plan.Label
	}
	return tier
}

// beside says what a knee's tier sits beside: "beside HBM 80 GiB", or
// "alone" for the first tier.
func beside(r results.Row, tier string) string {
	if tier == CapacityTiers[0] {
		return "alone"
	}
	return "beside " + tierLabel(CapacityTiers[0]) + " " + fmtCapacity(r.Get(CapacityTiers[0]+"_bytes"))
}

// withoutLabel names a configuration without tier: "HBM 80 GiB only",
// or "no KV cache".
func withoutLabel(r results.Row, tier string) string {
	if tier == CapacityTiers[0] {
		return "no KV cache"
	}
	return tierLabel(CapacityTiers[0]) + " " + fmtCapacity(r.Get(CapacityTiers[0]+"_bytes")) + " only"
}

// writePlanCheck writes the self-check: per configuration checked, the
// plan's prediction over the sample beside what the replay realized.
func writePlanCheck(w io.Writer, rows []results.Row) {
	if len(rows) == 0 {
		return
	}
	if a := rows[0].Get(ColAgainst); a != "" {
		fmt.Fprintf(w, "Self-check: %s replayed against %s.\n\n", rows[0].Get(ColSample), a)
	} else {
		fmt.Fprintf(w, "Self-check: not run (%s); the prediction over %s:\n\n", rows[0].Reason, rows[0].Get(ColSample))
	}
	t := report.NewTable("configuration", "hit predicted", "hit realized", "TTFT p50 predicted", "realized", "p90 predicted", "realized ")
	t.Hoist = false
	for _, r := range rows {
		var caps []string
		for _, tier := range CapacityTiers[:2] {
			caps = append(caps, tierLabel(tier)+" "+fmtCapacity(r.Get(tier+"_bytes")))
		}
		cells := []string{strings.Join(caps, ", "), report.FmtShare(r.Float(ColPredictedHit))}
		if r.Status != results.StatusOK {
			skip := t.Dash("skipped: " + r.Reason)
			t.Add(cells[0], cells[1], skip, report.FmtSec(r.Float(ColPredictedP50)), skip, report.FmtSec(r.Float(ColPredictedP90)), skip)
			continue
		}
		t.Add(cells[0], cells[1], report.FmtShare(r.Float(ColRealizedHit)),
			report.FmtSec(r.Float(ColPredictedP50)), report.FmtSec(r.Float(results.ColTTFTP50)),
			report.FmtSec(r.Float(ColPredictedP90)), report.FmtSec(r.Float(results.ColTTFTP90)))
	}
	t.Write(w)
}
