package probe

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results"
)

// nullSink is a Sink that keeps nothing.
type nullSink struct{}

func (nullSink) Write(results.Row) error { return nil }
func (nullSink) Close() error            { return nil }

// TestProbeSummary: probe ends with the four-tier table and the ratio a
// user asks for (what a CPU hit saves over a miss), counting only ok,
// verified requests; before, neither the console nor the report said
// miss/cpu.
func TestProbeSummary(t *testing.T) {
	t.Parallel()
	s := &ttftSink{Sink: nullSink{}}
	row := func(tier string, sec float64, verified string) {
		r := results.NewRow("probe")
		r.Tier, r.PrefixTokens, r.Seconds, r.Status = tier, 32768, sec, results.StatusOK
		r.Set("verified", verified)
		s.Write(r)
	}
	row("miss", 4.6, "true")
	row("cpu", 0.2, "true")
	row("cpu", 0.01, "false") // not confirmed by the counters: left out
	row("gpu", 0.1, "true")
	var b bytes.Buffer
	s.summary(&b, "simulated")
	out := b.String()
	for _, want := range []string{"(simulated)", "miss/cpu", "32k", "23.00×", "2.00×"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// A run whose every request went unverified ends saying so, not with
// silence where the table would be.
func TestProbeSummaryNoneVerified(t *testing.T) {
	t.Parallel()
	s := &ttftSink{Sink: nullSink{}}
	for range 3 {
		r := results.NewRow("probe")
		r.Tier, r.PrefixTokens, r.Seconds, r.Status = "gpu", 1024, 0.01, results.StatusOK
		r.Set("verified", "false")
		s.Write(r)
	}
	var b bytes.Buffer
	s.summary(&b, "measured")
	if want := "none of the 3 requests measured was verified"; !strings.Contains(b.String(), want) {
		t.Errorf("summary %q lacks %q", b.String(), want)
	}
}
