package mb1

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

// TestInterfereSummary: interfere ends with the penalty table, p50 over
// reps per (D, P) cell, the control arm beside it; error rows and the
// baseline arm stay out. Before, interfere ended with nothing but the
// path of mb1.csv.
func TestInterfereSummary(t *testing.T) {
	t.Parallel()
	s := &penaltySink{Sink: nullSink{}}
	row := func(arm string, d, p int, penalty float64, status results.Status) {
		r := results.NewRow("mb1")
		r.Status = status
		r.Set("arm", arm)
		r.Set("decode_streams", d)
		r.Set("prefill_tokens", p)
		r.Set("penalty", penalty)
		r.Set("base_tpot_s", 0.02)
		r.Set("prefill_ttft_s", 0.5)
		r.Set("eff_tpot_s", 0.02*penalty)
		s.Write(r)
	}
	for _, pen := range []float64{3, 4, 5} {
		row("interfere", 4, 8192, pen, results.StatusOK)
	}
	row("interfere", 4, 8192, 99, results.StatusError)
	row("baseline", 4, 8192, 50, results.StatusOK)
	row("control", 4, 8192, 1.1, results.StatusOK)
	row("interfere", 1, 2048, 1.5, results.StatusOK)
	var b bytes.Buffer
	s.summary(&b, "simulated")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "(simulated)") || !strings.Contains(lines[1], "penalty") {
		t.Fatalf("summary:\n%s", b.String())
	}
	for i, want := range [][]string{{"1", "2k", "1.50×", "—"}, {"4", "8k", "20.0 ms", "500 ms", "80.0 ms", "4.00×", "1.10×"}} {
		for _, w := range want {
			if !strings.Contains(lines[2+i], w) {
				t.Errorf("row %q lacks %q", lines[2+i], w)
			}
		}
	}
}

// Rows in which the simulator lagged are left out of the table, as the
// report leaves them out, and counted: the console and REPORT.md gave
// 25.00x and 27.1x for one run.
func TestInterfereSummaryLagged(t *testing.T) {
	t.Parallel()
	s := &penaltySink{Sink: nullSink{}}
	for _, c := range []struct{ penalty, lag float64 }{{25, 0.01}, {29, 0.02}, {5, 0.2}} {
		r := results.NewRow("mb1")
		r.Status, r.Seconds = results.StatusOK, 1.6
		r.Set("arm", ArmInterfere)
		r.Set("decode_streams", 8)
		r.Set("prefill_tokens", 16384)
		r.Set("penalty", c.penalty)
		r.Set(results.ColSimLag, c.lag)
		s.Write(r)
	}
	var b bytes.Buffer
	s.summary(&b, "simulated")
	if out := b.String(); !strings.Contains(out, "27.00×") || !strings.Contains(out, "1 row left out") {
		t.Errorf("summary:\n%s", out)
	}
}
