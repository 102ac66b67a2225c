package knee

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
)

// writeKnee writes the knee section, laid out like the reference's
// capacity table: per GPU KV capacity the realized APC and TTFT p90,
// with the LRU model's prediction, the other percentiles and the
// workload's working set.
func writeKnee(w io.Writer, run *analysis.Run) {
	rows := slices.Clone(run.FileWith(Suite.Name, results.ColAPCSource))
	if len(rows) == 0 {
		return
	}
	slices.SortStableFunc(rows, func(a, b results.Row) int {
		return int(a.Float(results.ColCapacityTokens) - b.Float(results.ColCapacityTokens))
	})
	first := rows[0]
	if i := slices.IndexFunc(rows, analysis.OK); i >= 0 {
		first = rows[i] // an error row may not know the workload
	}
	fmt.Fprintf(w, "One server per GPU KV capacity (%s), the same workload replayed against each: %s.", first.Get(results.ColServer), report.ServerSentence(first))
	if run.Manifest != nil && run.Manifest.Settings["generated"] != "" {
		fmt.Fprintf(w, " The workload: synthetic sessions, %s.", run.Manifest.Settings["generated"])
	}
	fmt.Fprint(w, "\n\n")
	t := report.NewTable("GPU KV (GB)", "realized APC", "TTFT p90", "blocks", "predicted APC", "TTFT p50", "TTFT p99", "requests")
	for _, r := range rows {
		gb := report.FmtGB(r.Float(results.ColCapacityBytes))
		if gb == "" {
			gb = t.Dash("the model's KV geometry is unknown: " + r.Get(results.ColCapacityTokens) + " tokens")
		}
		if r.Status == results.StatusError && r.Get(results.ColRequests) == "" {
			t.Add(gb, t.Dash(r.Reason), report.Dash, r.Get(results.ColGPUBlocks), report.Dash, report.Dash, report.Dash, report.Dash)
			continue
		}
		apc := report.FmtShare(r.Float(results.ColAPC))
		if apc == "" {
			apc = t.Dash(report.OrDash(r.Get(results.ColAPCSource)))
		}
		reqs := report.RequestCounts(r)
		if r.Status != results.StatusOK {
			reqs += " " + t.Note(r.Reason)
		}
		if analysis.Lagged(r) {
			reqs += " " + t.Note(fmt.Sprintf("kvtier sim fell %s behind real time, more than %.0f %% of the TTFT p50: left out of the findings", report.FmtSec(r.Float(results.ColSimLag)), 100*analysis.MaxSimLag))
		}
		t.Add(gb, apc, report.FmtSec(r.Float(results.ColTTFTP90)), r.Get(results.ColGPUBlocks), report.FmtShare(r.Float(results.ColPredictedAPC)),
			report.FmtSec(r.Float(results.ColTTFTP50)), report.FmtSec(r.Float(results.ColTTFTP99)), reqs)
	}
	t.Write(w)
	writeKneeFindings(w, rows, analysis.Unlagged(rows))
	report.WriteLaggedOut(w, len(rows)-len(analysis.Unlagged(rows)), analysis.MaxSimLag, "the TTFT p50 of their capacity")
	report.WriteSimLag(w, rows)
}

// A KneeShape is what a knee sweep's capacities (ok rows of knee.csv,
// by capacity) say about its knee.
type KneeShape struct {
	// Knee is the first capacity whose realized APC reaches 95 % of the
	// largest capacity's.
	Knee int
	// WorkingSet is the capacity nearest the workload's working set; -1
	// when the rows do not give it.
	WorkingSet int
	APCGain    float64 // realized APC at the largest capacity over the smallest's
	TTFTFall   float64 // TTFT p90 at the smallest capacity over the knee's
	// Flat is the largest |TTFT p90 / the knee's − 1| beyond the knee; 0
	// when the knee is the largest capacity.
	Flat float64
	Rows []results.Row // the capacities, ascending
}

// ShapeOfKnee returns the knee's shape from knee.csv's rows, which must
// all be ok.
func ShapeOfKnee(rows []results.Row) (KneeShape, error) {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b results.Row) int {
		return int(a.Float(results.ColCapacityTokens) - b.Float(results.ColCapacityTokens))
	})
	for _, r := range rows {
		if r.Status != results.StatusOK || math.IsNaN(r.Float(results.ColAPC)) || math.IsNaN(r.Float(results.ColTTFTP90)) {
			what := string(r.Status)
			if r.Reason != "" {
				what += ": " + r.Reason
			}
			return KneeShape{}, fmt.Errorf("capacity of %s blocks (%s) has no realized APC or no TTFT p90", r.Get(results.ColGPUBlocks), what)
		}
	}
	if len(rows) < 2 {
		return KneeShape{}, fmt.Errorf("%d capacities: a knee needs at least two", len(rows))
	}
	n := len(rows)
	apc := func(i int) float64 { return rows[i].Float(results.ColAPC) }
	p90 := func(i int) float64 { return rows[i].Float(results.ColTTFTP90) }
	k := KneeShape{Knee: n - 1, WorkingSet: -1, APCGain: apc(n-1) / apc(0), Rows: rows}
	for i := range rows {
		if apc(i) >= 0.95*apc(n-1) {
			k.Knee = i
			break
		}
	}
	k.TTFTFall = p90(0) / p90(k.Knee)
	for i := k.Knee + 1; i < n; i++ {
		k.Flat = max(k.Flat, math.Abs(p90(i)/p90(k.Knee)-1))
	}
	if ws := rows[0].Float(results.ColWorkingSetTokens); !math.IsNaN(ws) {
		k.WorkingSet = 0
		for i, r := range rows {
			if math.Abs(r.Float(results.ColCapacityTokens)-ws) < math.Abs(rows[k.WorkingSet].Float(results.ColCapacityTokens)-ws) {
				k.WorkingSet = i
			}
		}
	}
	return k, nil
}

// writeKneeFindings says where the working set is (the workload's, from
// any of rows), and, from the capacities kept, where the realized APC
// stops growing and how the TTFT falls across the knee.
func writeKneeFindings(w io.Writer, rows, kept []results.Row) {
	if i := slices.IndexFunc(rows, func(r results.Row) bool { return r.Get(results.ColWorkingSetTokens) != "" }); i >= 0 {
		size := report.Commas(int64(rows[i].Float(results.ColWorkingSetTokens))) + " tokens"
		if b := rows[i].Float(results.ColWorkingSetBytes); !math.IsNaN(b) {
			size = report.FmtGB(b) + " GB (" + size + ")"
		}
		fmt.Fprintf(w, "Working set: %s, the smallest cache at which the LRU model (blocks touched tail first, as vLLM frees them) serves every hit an infinite cache would, fed the requests in the order they are expected to be sent (**predicted**).", size)
	}
	k, err := ShapeOfKnee(kept)
	if err != nil {
		fmt.Fprintf(w, " No knee: %v.\n\n", err)
		return
	}
	kr, last := k.Rows[k.Knee], k.Rows[len(k.Rows)-1]
	fmt.Fprintf(w, " The realized APC rises from %s at the smallest capacity to %s at the largest and reaches 95 %% of that at %s GB (%s blocks); TTFT p90 falls %s× from the smallest capacity to there and stays within ±%s %% beyond it.\n\n",
		report.FmtShare(k.Rows[0].Float(results.ColAPC)), report.FmtShare(last.Float(results.ColAPC)), report.OrDash(report.FmtGB(kr.Float(results.ColCapacityBytes))), kr.Get(results.ColGPUBlocks), report.Sig(k.TTFTFall), report.Sig(100*k.Flat))
}

// kneeHeadline is the capacity knee: where the realized APC reaches 95 %
// of its largest, the TTFT p90 there and how far it fell, the working
// set beside it.
func kneeHeadline(runs []*analysis.Run) (string, string) {
	var rows []results.Row
	for _, r := range runs {
		rows = append(rows, r.FileWith(Suite.Name, results.ColAPCSource)...)
	}
	if len(rows) == 0 {
		return "", ""
	}
	kept := analysis.Unlagged(rows)
	k, err := ShapeOfKnee(kept)
	if err != nil {
		return "no knee: " + err.Error() + ".", ""
	}
	kr := k.Rows[k.Knee]
	s := fmt.Sprintf("the realized APC reaches 95 %% of its largest (%s) at %s GB of GPU KV, TTFT p90 %s there, %s× below the smallest capacity's",
		report.FmtShare(k.Rows[len(k.Rows)-1].Float(results.ColAPC)), report.OrDash(report.FmtGB(kr.Float(results.ColCapacityBytes))), report.FmtSec(kr.Float(results.ColTTFTP90)), report.Sig(k.TTFTFall))
	if ws := kr.Float(results.ColWorkingSetBytes); !math.IsNaN(ws) {
		s += fmt.Sprintf("; working set %s GB (%s)", report.FmtGB(ws), analysis.Predicted)
	}
	if n := len(rows) - len(kept); n > 0 {
		s += fmt.Sprintf(" (%d capacities left out: kvtier sim fell behind real time there by more than %.0f %% of their TTFT p50)", n, 100*analysis.MaxSimLag)
	}
	return s + ".", ""
}

// The knee's section, headline and figures (APC and TTFT against capacity).
func init() {
	report.RegisterSection(report.Section{Suite: Suite.Name, Write: writeKnee})
	report.RegisterHeadline(report.Headline{Suite: Suite.Name, Write: kneeHeadline})
	plots.Register(Suite.Name, drawKnee)
}
