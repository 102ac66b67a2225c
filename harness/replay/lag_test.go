package replay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// A run in which kvtier sim fell behind real time by more than 10 % of
// its TTFT p50 is footnoted in its section and left out of the headline,
// counted; one with a smaller lag stays in.
func TestReplayLeavesOutLaggedRuns(t *testing.T) {
	t.Parallel()
	run := func(trace string, lag float64) results.Row {
		r := results.NewRow(Suite.Name)
		r.Status = results.StatusOK
		for k, v := range map[string]any{results.ColTrace: trace, results.ColAPCSource: "/metrics", results.ColAPC: 0.5, results.ColTTFTP50: 0.4, results.ColTTFTP90: 0.8, results.ColSimLag: lag} {
			r.Set(k, v)
		}
		return r
	}
	runs := []*analysis.Run{{Dir: "r", Files: map[string][]results.Row{RunFile: {run("slow", 0.3), run("fine", 0.01)}}}}
	head, _ := replayHeadline(runs)
	if strings.Contains(head, "`slow`") || !strings.Contains(head, "`fine`") || !strings.Contains(head, "1 run left out: kvtier sim fell behind real time by more than 10 % of their TTFT p50") {
		t.Errorf("headline %q: want the lagged run left out, counted", head)
	}
	var b bytes.Buffer
	writeReplay(&b, runs[0])
	if n := strings.Count(b.String(), "Left out of these numbers: 1 row in which kvtier sim fell behind real time by more than 10 % of its TTFT p50"); n != 1 {
		t.Errorf("%d footnotes, want 1 (the lagged run's):\n%s", n, b.String())
	}
}
