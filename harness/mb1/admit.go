package mb1

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/units"
)

// A server that cannot run the D decodes and the prefill at once never
// yields an interference figure: the prefill waits for a slot until a
// decode ends (decodes of a few thousand tokens, minutes on a CPU). MB1
// refuses such a cell at start when the server says how many sequences
// it runs at once (serving.Slots), and otherwise gives the prefill a
// bounded time, a few times its TTFT alone, to answer beside the
// decodes.

// ErrNotAdmitted is the error of an interfere arm whose prefill was not
// served while its decodes ran.
var ErrNotAdmitted = errors.New("the prefill was not admitted while the decodes ran")

// admitFactor times the longest TTFT a prefill of its length has had
// (alone, or beside decodes in an earlier rep or cell: on a loaded
// machine it varies run to run) is how long it may take beside the
// decodes before it counts as not admitted; admitFloor is the least
// such bound.
const (
	admitFactor = 5
	admitFloor  = 5 * time.Second
)

// overSlots is the reason a cell of D decodes cannot run on a server of
// slots, "" when it can or the limit is unknown. A server whose API does
// not say may have said in its log since the run began (Ollama starts its
// runner on the first request).
func (r *Runner) overSlots(d int) string {
	if r.slots.N == 0 && r.cfg.ServerLog != nil {
		r.slots = r.cfg.ServerLog.Slots()
	}
	if r.slots.N == 0 || d+1 <= r.slots.N {
		return ""
	}
	return fmt.Sprintf("D=%d decodes and the prefill need %d sequences at once; the server runs at most %d (%s)%s",
		d, d+1, r.slots.N, r.slots.Source, r.raise())
}

// raise says which setting of the family raises its slots.
func (r *Runner) raise() string {
	if p := r.family.Traits().Parallel; p != "" {
		return ": raise " + p + " or lower --decode"
	}
	return ": lower --decode"
}

// refusal is the reason the cell (d, p) is not run: more sequences than
// the server's slots, or a smaller D whose prefill was not admitted.
func (r *Runner) refusal(d, p int) string {
	if why := r.overSlots(d); why != "" {
		return why
	}
	if low, ok := r.unadmitted[p]; ok && d >= low {
		return fmt.Sprintf("not run: the prefill of %d tokens was not admitted beside D=%d decodes (its row says why)", p, low)
	}
	return ""
}

// refuse writes the skipped rows of the reps of a cell not run, from
// rep from on: one per arm and rep.
func (r *Runner) refuse(d, p, from int, why string, rows results.Sink) error {
	for rep := from; rep < r.cfg.Reps; rep++ {
		for _, arm := range r.arms() {
			res := armResult{arm: arm, d: d, p: p, rep: rep, skip: why}
			row := r.row(res, 0)
			r.log(row)
			if err := rows.Write(row); err != nil {
				return err
			}
		}
	}
	return nil
}

// arms lists the arms of a cell, in the order they run.
func (r *Runner) arms() []string {
	arms := []string{ArmInterfere}
	if r.control != nil {
		arms = append(arms, ArmControl)
	}
	return append(arms, ArmBaseline)
}

// admitBound is how long the interfere arm's prefill of p tokens may
// take beside the decodes: admitFactor times the longest TTFT a prefill
// of p tokens had (the first, alone, sent once per P before its first
// cell), at least admitFloor and at most the request timeout. It is 0
// (the timeout bounds it) when the prefill alone failed.
func (r *Runner) admitBound(ctx context.Context, p int) time.Duration {
	if _, ok := r.longest[p]; !ok {
		id := fmt.Sprintf("kvtier-mb1-%d-solo-p%d", r.cfg.Seed, p)
		var ttft time.Duration
		if pr, err := r.prompts.Make(ctx, id, p, true); err == nil {
			if s, err := r.c.Stream(ctx, r.prompts.Request(pr, 1, id), nil); err == nil {
				ttft = s.TTFT
			}
		}
		if ctx.Err() != nil {
			return 0
		}
		r.longest[p] = ttft
	}
	if r.longest[p] <= 0 {
		return 0
	}
	return min(max(admitFactor*r.longest[p], admitFloor), r.cfg.Timeout)
}

// admitted records the TTFT of a prefill of p tokens that was admitted.
func (r *Runner) admitted(p int, ttft time.Duration) {
	if r.longest[p] > 0 {
		r.longest[p] = max(r.longest[p], ttft)
	}
}

// notAdmitted is the error of a prefill of p tokens that had no first
// token within bound beside d decodes.
func (r *Runner) notAdmitted(d, p int, bound time.Duration) error {
	r.unadmitted[p] = d
	return fmt.Errorf("%w: no first token within %s (%d× the longest TTFT it had before) beside D=%d decodes, so the server runs fewer than %d sequences at once%s",
		ErrNotAdmitted, bound.Round(time.Millisecond), admitFactor, d, d+1, r.raise())
}

// endedBefore reports a decode stream that ended (of itself: finished,
// or failed) before the arm's prefill had its first token at done. In
// the interfere arm the prefill may have waited for the slot it freed,
// so the window measures no interference (ErrNotAdmitted); in the
// control arm, whose prefill went to the control instance beside no
// decode, the window saw fewer than the arm's decodes, so it measures
// no control figure.
func endedBefore(arm string, done float64, ended []bool, ends []float64) error {
	for i, e := range ends {
		if !ended[i] || e > done {
			continue
		}
		what := fmt.Sprintf("decode stream %d ended at %s, before the %s prefill's first token at %s", i, units.FormatSeconds(e), arm, units.FormatSeconds(done))
		if arm == ArmControl {
			return fmt.Errorf("%s (sent to the control instance, which runs no decode): the window saw fewer than the arm's %d decodes, so it measures no control figure (raise --decode-tokens if the stream finished)",
				what, len(ends))
		}
		return fmt.Errorf("%w: %s, so the prefill may have waited for the slot it freed (a server that runs fewer sequences at once, or one at a time; raise --decode-tokens if the stream finished)",
			ErrNotAdmitted, what)
	}
	return nil
}

// Slots returns what the runner knows of the server's slots.
func (r *Runner) Slots() serving.Slots { return r.slots }
