package mb1

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// Rows in which kvtier sim fell behind real time by more than a tenth
// of the prefill TTFT they measure are left out of the section's and
// the headline's numbers, and counted.
func TestLaggedRowsLeftOut(t *testing.T) {
	t.Parallel()
	row := func(penalty, lag float64) results.Row {
		r := results.NewRow(Suite.Name)
		r.Status = results.StatusOK
		r.SetTime(1)
		r.Set(results.ColSimulated, true)
		r.Set(results.ColArm, ArmInterfere)
		r.Set(results.ColDecodeStreams, 1)
		r.Set(results.ColPrefillTokens, 32768)
		r.Set(results.ColPenalty, penalty)
		r.Set(results.ColSimLag, lag)
		return r
	}
	run := &analysis.Run{Files: map[string][]results.Row{Suite.Files[0].Name: {row(100, 0.01), row(5000, 2.1)}}}
	var b bytes.Buffer
	writeMB1(&b, run)
	if s := b.String(); !strings.Contains(s, "| 100× |") || !strings.Contains(s, "Left out of these numbers: 1 row in which kvtier sim fell behind") {
		t.Errorf("section:\n%s", s)
	}
	if line, _ := mb1Headline([]*analysis.Run{run}); strings.Contains(line, "5,000") || strings.Contains(line, "2,550") {
		t.Errorf("headline takes the lagged row: %s", line)
	}
}
