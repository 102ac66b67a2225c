package mb1

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
)

// A penaltySink passes rows on to its Sink and keeps the figures of every
// ok interfere and control row by cell (D, P), for interfere's closing
// summary.
type penaltySink struct {
	results.Sink
	cells map[[2]int64]*penaltyCell
	// lagged counts the ok rows left out because kvtier sim fell behind
	// real time in them (analysis.Lagged), as the report leaves them out.
	lagged int
}

// A penaltyCell holds one (D, P) cell's samples over reps.
type penaltyCell struct {
	base, ttft, eff, penalty, control []float64
}

// penaltyColumns are the figures a cell keeps, by the interfere arm's
// column.
var penaltyColumns = []struct {
	col string
	get func(*penaltyCell) *[]float64
}{
	{"base_tpot_s", func(c *penaltyCell) *[]float64 { return &c.base }},
	{"prefill_ttft_s", func(c *penaltyCell) *[]float64 { return &c.ttft }},
	{"eff_tpot_s", func(c *penaltyCell) *[]float64 { return &c.eff }},
	{"penalty", func(c *penaltyCell) *[]float64 { return &c.penalty }},
}

func (s *penaltySink) Write(r results.Row) error {
	arm := r.Get("arm")
	if r.Status == results.StatusOK && (arm == ArmInterfere || arm == ArmControl) && analysis.Lagged(r) {
		s.lagged++
	} else if r.Status == results.StatusOK && (arm == ArmInterfere || arm == ArmControl) {
		if s.cells == nil {
			s.cells = map[[2]int64]*penaltyCell{}
		}
		k := [2]int64{int64(r.Float("decode_streams")), int64(r.Float("prefill_tokens"))}
		c := s.cells[k]
		if c == nil {
			c = &penaltyCell{}
			s.cells[k] = c
		}
		c.add(arm, r)
	}
	return s.Sink.Write(r)
}

// add keeps the figures of one ok row of arm.
func (c *penaltyCell) add(arm string, r results.Row) {
	if arm == ArmControl {
		if v := r.Float("penalty"); v > 0 {
			c.control = append(c.control, v)
		}
		return
	}
	for _, pc := range penaltyColumns {
		if v := r.Float(pc.col); v > 0 {
			p := pc.get(c)
			*p = append(*p, v)
		}
	}
}

// summary writes the penalty table, as vllm bench serve ends with its
// summary: per cell (D decode streams, a P-token prefill) the p50 over
// reps of the base TPOT, the prefill's TTFT, the effective TPOT while it
// ran and the penalty (effective over base TPOT), and the control arm's
// penalty (the prefill sent to another instance); kind says what the
// figures are (measured, simulated).
func (s *penaltySink) summary(w io.Writer, kind string) {
	keys := make([][2]int64, 0, len(s.cells))
	for k := range s.cells {
		keys = append(keys, k)
	}
	defer s.laggedNote(w)
	if len(keys) == 0 {
		return
	}
	slices.SortFunc(keys, func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[1], b[1]), cmp.Compare(a[0], b[0])) })
	p50 := func(xs []float64) float64 { return analysis.Summarize(xs).P50 }
	sec := func(xs []float64) string {
		if v := p50(xs); v > 0 {
			return units.FormatSeconds(v)
		}
		return "—"
	}
	times := func(xs []float64) string {
		if v := p50(xs); v > 0 {
			return fmt.Sprintf("%.2f×", v)
		}
		return "—"
	}
	fmt.Fprintf(w, "kvtier interfere: decode penalty of a prefill, p50 over reps (%s)\n", kind)
	fmt.Fprintf(w, "%4s %8s %11s %13s %11s %9s %9s\n", "D", "P", "base TPOT", "prefill TTFT", "eff. TPOT", "penalty", "control")
	for _, k := range keys {
		c := s.cells[k]
		fmt.Fprintf(w, "%4d %8s %11s %13s %11s %9s %9s\n", k[0], units.FormatTokens(k[1]),
			sec(c.base), sec(c.ttft), sec(c.eff), times(c.penalty), times(c.control))
	}
}

// laggedNote says how many rows the summary left out because the
// simulator lagged in them.
func (s *penaltySink) laggedNote(w io.Writer) {
	if s.lagged > 0 {
		fmt.Fprintf(w, "kvtier interfere: %s left out of the table, as the report leaves them out: kvtier sim fell behind real time in them by more than %.0f %% of their prefill TTFT (sim_lag_s)\n", units.Count(s.lagged, "row", "rows"), 100*analysis.MaxSimLag)
	}
}
