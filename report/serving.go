package report

import (
	"fmt"
	"io"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
)

// ServerSentence says what served a run: a simulator, labelled as one.
func ServerSentence(r results.Row) string {
	what := "a live server"
	if r.Get(results.ColSimulated) == "true" {
		what = "**kvtier's simulator** (simulated figures, not a GPU's)"
	}
	return fmt.Sprintf("%s, model %s, workload `%s` (%s dispatch, concurrency %s)", what, OrDash(r.Model), r.Get(results.ColTrace), r.Get(results.ColDispatch), concurrency(r.Get(results.ColConcurrency)))
}

func concurrency(s string) string {
	if s == "0" || s == "" {
		return "unlimited"
	}
	return s
}

// RequestCounts renders ok/failed/timed out/skipped of a run row.
func RequestCounts(r results.Row) string {
	s := r.Get(results.ColOk) + " ok"
	for _, c := range []struct{ col, name string }{{results.ColFailed, "failed"}, {results.ColTimedOut, "timed out"}, {results.ColSkipped, "skipped"}} {
		if v := r.Get(c.col); v != "" && v != "0" {
			s += ", " + v + " " + c.name
		}
	}
	return s
}

// WriteLaggedOut says that n rows are left out of the numbers above
// because kvtier sim fell behind real time during them by more than
// share of measure, the figure they measure (analysis.Lagged); nothing
// when n is 0.
func WriteLaggedOut(w io.Writer, n int, share float64, measure string) {
	if n > 0 {
		Paragraph(w, fmt.Sprintf("Left out of these numbers: %s in which kvtier sim fell behind real time by more than %.0f %% of %s (sim_lag_s): their figures are this machine's load, not the model's.", units.Count(n, "row", "rows"), 100*share, measure))
	}
}

// simLagNotable is the simulator lag worth a sentence: beyond it the
// machine's load shows in the TTFTs.
const simLagNotable = 0.005

// WriteSimLag says how far a real-time simulator fell behind real time,
// when it did notably: that much of this machine's load is in its TTFTs.
func WriteSimLag(w io.Writer, rows []results.Row) {
	worst, at := 0.0, ""
	for _, r := range rows {
		if v := r.Float(results.ColSimLag); v > worst {
			worst, at = v, r.Get(results.ColGPUBlocks)
		}
	}
	if worst > simLagNotable {
		fmt.Fprintf(w, "The simulator fell up to %s behind real time (kvtier_sim_lag_seconds, at %s GPU blocks): this machine's load, not the model, is in its TTFTs up to that much.\n\n", FmtSec(worst), at)
	}
}
