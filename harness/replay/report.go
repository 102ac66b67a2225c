package replay

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/units"
)

// family is the server family a row names.
func family(r results.Row) serving.Family {
	return serving.Family{Name: r.Get(results.ServerFamilyColumn.Name)}
}

// writeReplay writes the replay section: per run the realized APC from
// the server's counters beside the LRU model's prediction, the TTFT and
// TPOT percentiles and goodput.
func writeReplay(w io.Writer, run *analysis.Run) {
	for _, r := range run.FileWith(Suite.Name, results.ColAPCSource) {
		fmt.Fprintf(w, "Replayed against %s at `%s`: %s requests (%s) in %s.\n\n", report.ServerSentence(r), r.Get(results.ColEndpoint), r.Get(results.ColRequests), report.RequestCounts(r), report.FmtSec(r.Float(results.ColDuration)))
		t := report.NewTable("realized APC", "external APC", "predicted APC", "cached share (usage)", "TTFT p50", "p90", "p99", "TPOT p50", "goodput", "throughput")
		pred := report.FmtShare(r.Float(results.ColPredictedAPC))
		if pred == "" {
			pred = t.Dash("the server's capacity is unknown (" + family(r).NoPoolSize() + ")")
		}
		apc := report.FmtShare(r.Float(results.ColAPC))
		if apc == "" {
			apc = t.Dash(r.Get(results.ColAPCSource))
		}
		good := report.Sig(r.Float(results.ColGoodputRPS)) + " req/s"
		if math.IsNaN(r.Float(results.ColGoodputRPS)) {
			good = t.Dash("no --slo-ttft or --slo-tpot")
		}
		ext, cached := report.FmtShare(r.Float(results.ColAPCExternal)), report.FmtShare(r.Float(results.ColCachedShare))
		if ext == "" {
			ext = t.Dash("the server counted no external (KV connector) prefix-cache queries")
			if f := family(r); f.Traits().Metrics == "" {
				ext = t.Dash(f.NoCounters(nil))
			}
		}
		cached = cachedShareCell(t, r, cached)
		t.Add(apc, ext, pred, cached,
			report.FmtSec(r.Float(results.ColTTFTP50)), report.FmtSec(r.Float(results.ColTTFTP90)), report.FmtSec(r.Float(results.ColTTFTP99)), report.FmtSec(r.Float(results.ColTPOTP50)),
			good, report.Sig(r.Float(results.ColThroughputRPS))+" req/s")
		t.Write(w)
		fmt.Fprintf(w, "Realized APC is the server's prefix-cache hits over its queries across the run (%s). The prediction is the LRU model's at the server's %s GPU blocks (%s tokens), fed the requests in the order they were sent.\n\n",
			report.OrDash(r.Get(results.ColAPCSource)), report.OrDash(r.Get(results.ColGPUBlocks)), report.OrDash(r.Get(results.ColCapacityTokens)))
		if r.Status != results.StatusOK {
			fmt.Fprintf(w, "Run status %s: %s.\n\n", r.Status, r.Reason)
		}
		report.WriteSimLag(w, []results.Row{r})
		if analysis.Lagged(r) {
			report.WriteLaggedOut(w, 1, analysis.MaxSimLag, "its TTFT p50")
		}
	}
}

// replayHeadline is each replay's realized APC against the LRU model's
// and its TTFT percentiles.
func replayHeadline(runs []*analysis.Run) (string, string) {
	var parts []string
	lagged := 0
	for _, r := range runs {
		for _, x := range r.FileWith(Suite.Name, results.ColAPCSource) {
			if analysis.Lagged(x) {
				lagged++
				continue
			}
			parts = append(parts, fmt.Sprintf("`%s`: realized APC %s (%s: %s), TTFT p50 %s, p90 %s", x.Get(results.ColTrace),
				report.OrDash(report.FmtShare(x.Float(results.ColAPC))), analysis.Predicted, report.OrDash(report.FmtShare(x.Float(results.ColPredictedAPC))),
				report.OrDash(report.FmtSec(x.Float(results.ColTTFTP50))), report.OrDash(report.FmtSec(x.Float(results.ColTTFTP90)))))
		}
	}
	if lagged > 0 {
		parts = append(parts, fmt.Sprintf("%s left out: kvtier sim fell behind real time by more than %.0f %% of their TTFT p50", units.Count(lagged, "run", "runs"), 100*analysis.MaxSimLag))
	}
	if len(parts) == 0 {
		return "", ""
	}
	return strings.Join(parts, "; ") + ".", ""
}

// cachedShareCell is the cached share's cell: the share, or a dash
// saying why there is none; never a share above 100 % (a server's
// impossible figure), and the requests whose figures were impossible
// are counted beside it.
func cachedShareCell(t *report.Table, r results.Row, cell string) string {
	n := r.Float(results.ColServerImpossible)
	switch {
	case r.Float(results.ColCachedShare) > 1:
		return t.Dash("impossible: the server reported more cached tokens than prompt tokens")
	case cell == "" && n > 0:
		return t.Dash(fmt.Sprintf("impossible: every request's cached tokens were (%g; see server_check)", n))
	case cell == "":
		return t.Dash(family(r).NoCachedTokens())
	case n > 0:
		return cell + " " + t.Note(units.Count(int(n), "request", "requests")+" with impossible server figures left out (server_check)")
	}
	return cell
}

// The replay's report: its section and headline.
func init() {
	report.RegisterSection(report.Section{Suite: Suite.Name, Write: writeReplay})
	report.RegisterHeadline(report.Headline{Suite: Suite.Name, Write: replayHeadline})
}
