package probe

import (
	"fmt"
	"io"
	"slices"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
)

// A ttftSink passes rows on to its Sink and keeps the TTFT of every ok,
// verified one by tier and prompt length, for probe's closing summary.
type ttftSink struct {
	results.Sink
	ttft       map[string]map[int64][]float64 // tier → L → seconds
	unverified int                            // ok rows the server's counters did not confirm
}

func (s *ttftSink) Write(r results.Row) error {
	if r.Status == results.StatusOK && r.Get("verified") == "false" {
		s.unverified++
	}
	if r.Status == results.StatusOK && r.Get("verified") != "false" && r.Seconds > 0 {
		if s.ttft == nil {
			s.ttft = map[string]map[int64][]float64{}
		}
		if s.ttft[r.Tier] == nil {
			s.ttft[r.Tier] = map[int64][]float64{}
		}
		s.ttft[r.Tier][r.PrefixTokens] = append(s.ttft[r.Tier][r.PrefixTokens], r.Seconds)
	}
	return s.Sink.Write(r)
}

// summary writes the four-tier table, as vllm bench serve ends with its
// summary: TTFT p50 per tier and L, and the ratios miss/cpu (what a CPU
// hit saves over a miss), cpu/gpu and miss/remote; kind says what the
// figures are (measured, simulated).
func (s *ttftSink) summary(w io.Writer, kind string) {
	var ls []int64
	for _, byL := range s.ttft {
		for l := range byL {
			if !slices.Contains(ls, l) {
				ls = append(ls, l)
			}
		}
	}
	if len(ls) == 0 {
		if s.unverified > 0 {
			fmt.Fprintf(w, "kvtier probe: no TTFT table: none of the %s measured was verified (each row's verify_reason in probe.csv says why)\n", units.Count(s.unverified, "request", "requests"))
		}
		return
	}
	slices.Sort(ls)
	p50 := func(tier string, l int64) float64 { return analysis.Summarize(s.ttft[tier][l]).P50 }
	cell := func(v float64) string {
		if v > 0 {
			return units.FormatSeconds(v)
		}
		return "—"
	}
	ratio := func(a, b float64) string {
		if a > 0 && b > 0 {
			return fmt.Sprintf("%.2f×", a/b)
		}
		return "—"
	}
	fmt.Fprintf(w, "kvtier probe: TTFT p50 of verified requests (%s)\n", kind)
	fmt.Fprintf(w, "%8s %10s %10s %10s %10s %9s %9s %12s\n", "L", tierMiss, tierGPU, tierCPU, tierRemote, "miss/cpu", "cpu/gpu", "miss/remote")
	for _, l := range ls {
		m, g, c, r := p50(tierMiss, l), p50(tierGPU, l), p50(tierCPU, l), p50(tierRemote, l)
		fmt.Fprintf(w, "%8s %10s %10s %10s %10s %9s %9s %12s\n", units.FormatTokens(l),
			cell(m), cell(g), cell(c), cell(r), ratio(m, c), ratio(c, g), ratio(m, r))
	}
}
