package report

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

func init() {
	RegisterSection(Section{Suite: "replay", Write: WriteReplay})
	RegisterSection(Section{Suite: "knee", Write: WriteKnee})
}

// runRows returns the rows of the suite's per-run (replay) or
// per-capacity (knee) file: the one with the apc_source column.
func runRows(run *analysis.Run, suite string) []results.Row {
	return run.FileWith(suite, results.ColAPCSource)
}

// serverSentence says what served a run: a simulator, labelled as one.
func serverSentence(r results.Row) string {
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

// requestCounts renders ok/failed/timed out/skipped of a run row.
func requestCounts(r results.Row) string {
	s := r.Get(results.ColOk) + " ok"
	for _, c := range []struct{ col, name string }{{results.ColFailed, "failed"}, {results.ColTimedOut, "timed out"}, {results.ColSkipped, "skipped"}} {
		if v := r.Get(c.col); v != "" && v != "0" {
			s += ", " + v + " " + c.name
		}
	}
	return s
}

// WriteReplay writes the replay section: per run the realized APC from
// the server's counters beside the LRU model's prediction, the TTFT and
// TPOT percentiles and goodput.
func WriteReplay(w io.Writer, run *analysis.Run) {
	for _, r := range runRows(run, "replay") {
		fmt.Fprintf(w, "Replayed against %s at `%s`: %s requests (%s) in %s.\n\n", serverSentence(r), r.Get(results.ColEndpoint), r.Get(results.ColRequests), requestCounts(r), FmtSec(r.Float(results.ColDuration)))
		t := NewTable("realized APC", "external APC", "predicted APC", "cached share (usage)", "TTFT p50", "p90", "p99", "TPOT p50", "goodput", "throughput")
		pred := FmtShare(r.Float(results.ColPredictedAPC))
		if pred == "" {
			pred = t.Dash("the server's capacity is unknown (no num_gpu_blocks in vllm:cache_config_info)")
		}
		apc := FmtShare(r.Float(results.ColAPC))
		if apc == "" {
			apc = t.Dash(r.Get(results.ColAPCSource))
		}
		good := Sig(r.Float(results.ColGoodputRPS)) + " req/s"
		if math.IsNaN(r.Float(results.ColGoodputRPS)) {
			good = t.Dash("no --slo-ttft or --slo-tpot")
		}
		ext, cached := FmtShare(r.Float(results.ColAPCExternal)), FmtShare(r.Float(results.ColCachedShare))
		if ext == "" {
			ext = t.Dash("the server counted no external (KV connector) prefix-cache queries")
		}
		cached = cachedShareCell(t, r, cached)
		t.Add(apc, ext, pred, cached,
			FmtSec(r.Float(results.ColTTFTP50)), FmtSec(r.Float(results.ColTTFTP90)), FmtSec(r.Float(results.ColTTFTP99)), FmtSec(r.Float(results.ColTPOTP50)),
			good, Sig(r.Float(results.ColThroughputRPS))+" req/s")
		t.Write(w)
		fmt.Fprintf(w, "Realized APC is the server's prefix-cache hits over its queries across the run (%s). The prediction is the LRU model's at the server's %s GPU blocks (%s tokens), fed the requests in the order they were sent.\n\n",
			OrDash(r.Get(results.ColAPCSource)), OrDash(r.Get(results.ColGPUBlocks)), OrDash(r.Get(results.ColCapacityTokens)))
		if r.Status != results.StatusOK {
			fmt.Fprintf(w, "Run status %s: %s.\n\n", r.Status, r.Reason)
		}
		writeSimLag(w, []results.Row{r})
	}
}

// cachedShareCell is the cached share's cell: the share, or a dash
// saying why there is none; never a share above 100 % (a server's
// impossible figure), and the requests whose figures were impossible
// are counted beside it.
func cachedShareCell(t *Table, r results.Row, cell string) string {
	n := r.Float(results.ColServerImpossible)
	switch {
	case r.Float(results.ColCachedShare) > 1:
		return t.Dash("impossible: the server reported more cached tokens than prompt tokens")
	case cell == "" && n > 0:
		return t.Dash(fmt.Sprintf("impossible: every request's cached tokens were (%g; see server_check)", n))
	case cell == "":
		return t.Dash("the server sent no usage cached_tokens (vLLM: --enable-prompt-tokens-details)")
	case n > 0:
		return cell + " " + t.Note(fmt.Sprintf("%g request(s) with impossible server figures left out (server_check)", n))
	}
	return cell
}

// WriteKnee writes the knee section, laid out like the reference's
// capacity table: per GPU KV capacity the realized APC and TTFT p90,
// with the LRU model's prediction, the other percentiles and the
// workload's working set.
func WriteKnee(w io.Writer, run *analysis.Run) {
	rows := slices.Clone(runRows(run, "knee"))
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
	fmt.Fprintf(w, "One server per GPU KV capacity (%s), the same workload replayed against each: %s.", first.Get(results.ColServer), serverSentence(first))
	if run.Manifest != nil && run.Manifest.Settings["generated"] != "" {
		fmt.Fprintf(w, " The workload: synthetic sessions, %s.", run.Manifest.Settings["generated"])
	}
	fmt.Fprint(w, "\n\n")
	t := NewTable("GPU KV (GB)", "realized APC", "TTFT p90", "blocks", "predicted APC", "TTFT p50", "TTFT p99", "requests")
	for _, r := range rows {
		gb := FmtGB(r.Float(results.ColCapacityBytes))
		if gb == "" {
			gb = t.Dash("the model's KV geometry is unknown: " + r.Get(results.ColCapacityTokens) + " tokens")
		}
		if r.Status == results.StatusError && r.Get(results.ColRequests) == "" {
			t.Add(gb, t.Dash(r.Reason), Dash, r.Get(results.ColGPUBlocks), Dash, Dash, Dash, Dash)
			continue
		}
		apc := FmtShare(r.Float(results.ColAPC))
		if apc == "" {
			apc = t.Dash(OrDash(r.Get(results.ColAPCSource)))
		}
		reqs := requestCounts(r)
		if r.Status != results.StatusOK {
			reqs += " " + t.Note(r.Reason)
		}
		t.Add(gb, apc, FmtSec(r.Float(results.ColTTFTP90)), r.Get(results.ColGPUBlocks), FmtShare(r.Float(results.ColPredictedAPC)),
			FmtSec(r.Float(results.ColTTFTP50)), FmtSec(r.Float(results.ColTTFTP99)), reqs)
	}
	t.Write(w)
	writeKneeFindings(w, rows)
	writeSimLag(w, rows)
}

// simLagNotable is the simulator lag worth a sentence: beyond it the
// machine's load shows in the TTFTs.
const simLagNotable = 0.005

// writeSimLag says how far a real-time simulator fell behind real time,
// when it did notably: that much of this machine's load is in its TTFTs.
func writeSimLag(w io.Writer, rows []results.Row) {
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

// writeKneeFindings says where the working set is, where the realized
// APC stops growing and how the TTFT falls across the knee.
func writeKneeFindings(w io.Writer, rows []results.Row) {
	if i := slices.IndexFunc(rows, func(r results.Row) bool { return r.Get(results.ColWorkingSetTokens) != "" }); i >= 0 {
		size := Commas(int64(rows[i].Float(results.ColWorkingSetTokens))) + " tokens"
		if b := rows[i].Float(results.ColWorkingSetBytes); !math.IsNaN(b) {
			size = FmtGB(b) + " GB (" + size + ")"
		}
		fmt.Fprintf(w, "Working set: %s, the smallest cache at which the LRU model (blocks touched tail first, as vLLM frees them) serves every hit an infinite cache would, fed the requests in the order they are expected to be sent (**predicted**).", size)
	}
	k, err := ShapeOfKnee(rows)
	if err != nil {
		fmt.Fprintf(w, " No knee: %v.\n\n", err)
		return
	}
	kr, last := k.Rows[k.Knee], k.Rows[len(k.Rows)-1]
	fmt.Fprintf(w, " The realized APC rises from %s at the smallest capacity to %s at the largest and reaches 95 %% of that at %s GB (%s blocks); TTFT p90 falls %s× from the smallest capacity to there and stays within ±%s %% beyond it.\n\n",
		FmtShare(k.Rows[0].Float(results.ColAPC)), FmtShare(last.Float(results.ColAPC)), OrDash(FmtGB(kr.Float(results.ColCapacityBytes))), kr.Get(results.ColGPUBlocks), Sig(k.TTFTFall), Sig(100*k.Flat))
}
