package replayer

import (
	"math"
	"testing"

	"github.com/kvtier/kvtier/results"
)

// Requests whose server figures are impossible are counted in the run
// row, and their cached tokens (left out of the request rows) never lift
// the cached share.
func TestSummaryCountsImpossible(t *testing.T) {
	t.Parallel()
	row := func(prompt, cached string, check string) results.Row {
		r := results.Row{Status: results.StatusOK, Extra: map[string]string{"outcome": OutcomeOK, "prompt_tokens": prompt, "cached_tokens": cached, results.ColServerCheck: check}}
		return r
	}
	var c collector
	c.add(row("100", "50", ""))
	c.add(row("100", "", "impossible: usage.prompt_tokens_details.cached_tokens 7265 above the prompt's 100 tokens"))
	s := (&Replayer{w: &Workload{}}).summarize(&c, 1)
	if s.Impossible != 1 || math.Abs(s.CachedShare-0.5) > 1e-12 {
		t.Errorf("impossible %d, cached share %g; want 1, 0.5", s.Impossible, s.CachedShare)
	}
	if got := s.Row("replay").Get(results.ColServerImpossible); got != "1" {
		t.Errorf("run row %s = %q, want 1", results.ColServerImpossible, got)
	}
}
