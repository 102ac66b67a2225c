package replayer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/workload"
)

// Outcomes of a request (the outcome column).
const (
	OutcomeOK      = "ok"
	OutcomeFailed  = "failed"  // an HTTP error, an error event, a cut stream
	OutcomeTimeout = "timeout" // no complete answer within the request timeout
	OutcomeSkipped = "skipped" // not sent: the server could not take it
)

// newRow fills the columns every request row of the run has.
func (rp *Replayer) newRow(r *workload.Request) results.Row {
	row := results.NewRow(rp.cfg.Suite)
	row.Backend, row.Transport, row.Model = Backend, Transport, rp.info.Model
	row.PrefixTokens = int64(r.Input)
	bs := int64(rp.info.BlockSize)
	row.Blocks = (row.PrefixTokens + bs - 1) / bs
	row.Bytes = row.PrefixTokens * rp.info.BytesPerToken
	row.Set(results.ColEndpoint, rp.info.Endpoint)
	row.Set(results.ColSimulated, rp.info.Simulated)
	row.Set("server_family", rp.info.Family.Name)
	row.Set(results.ColTrace, rp.w.Name)
	row.Set(results.ColDispatch, string(rp.cfg.Dispatch))
	row.Set("request_index", r.Index)
	row.Set("trace_line", r.Line)
	row.Set("request_id", rp.requestID(r))
	row.Set("session", r.Session)
	row.Set("turn", r.Turn)
	row.Set(results.ColInputTokens, r.Input)
	row.Set("api", cmp.Or(rp.cfg.API, serving.APICompletions))
	if rp.info.GPUBlocks > 0 {
		row.Set(results.ColGPUBlocks, rp.info.GPUBlocks)
	}
	return row
}

func (rp *Replayer) requestID(r *workload.Request) string {
	return fmt.Sprintf("kvtier-replay-%x-%d", rp.info.Nonce, r.Index)
}

// maxTokens is the max_tokens of r: its output_length (at least 1)
// capped by MaxOutput.
func (rp *Replayer) maxTokens(r *workload.Request) int {
	n := max(r.Output, 1)
	if rp.cfg.MaxOutput > 0 {
		n = min(n, rp.cfg.MaxOutput)
	}
	return n
}

// send sends r, due at due after start, and returns its row; ok is false
// when ctx ended before its answer did (an interruption, not the
// server's failure: no row).
func (rp *Replayer) send(ctx context.Context, r *workload.Request, start harness.Stopwatch, due time.Duration) (row results.Row, ok bool) {
	row = rp.newRow(r)
	row.Set("sched_s", due.Seconds())
	mt := rp.maxTokens(r)
	row.Set("max_tokens", mt)
	if l := rp.info.MaxModelLen; l > 0 && r.Input+mt > l {
		row.Skip(fmt.Sprintf("prompt of %d tokens + max_tokens %d exceed the server's max_model_len %d", r.Input, mt, l))
		row.Set("outcome", OutcomeSkipped)
		return row, true
	}
	if hit, known := rp.pred.predict(r); known {
		row.Set("predicted_hit_tokens", hit)
	}
	if err := rp.c.Tripped(); err != nil {
		row.Skip(err.Error())
		row.Set("outcome", OutcomeSkipped)
		return row, true
	}
	req, err := rp.request(ctx, r, mt)
	row.Set("dispatch_s", start.Seconds())
	var s serving.Stream
	if err == nil {
		s, err = rp.c.Stream(ctx, req, nil)
		row.Set("prompt_form", s.Form)
	}
	if err == nil {
		rp.fill(&row, s)
		err = s.PromptCheck()
	}
	if err != nil {
		if ctx.Err() != nil {
			return row, false
		}
		outcome := OutcomeFailed
		switch {
		case serving.Skipped(err):
			row.Skip(err.Error())
			row.Set("outcome", OutcomeSkipped)
			return row, true
		case errors.Is(err, context.DeadlineExceeded):
			outcome = OutcomeTimeout
		}
		row.Fail(err)
		row.Set("outcome", outcome)
		return row, true
	}
	return row, true
}

// request is r's request: its prompt of token ids, or for the chat API
// that prompt spelled as a user message of r.Input tokens.
func (rp *Replayer) request(ctx context.Context, r *workload.Request, maxTokens int) (serving.Request, error) {
	req := serving.Request{API: rp.cfg.API, Model: rp.info.Model, Prompt: rp.prompts.Tokens(r), PromptTokens: r.Input,
		MaxTokens: maxTokens, RequestID: rp.requestID(r), CountTokens: true}
	if req.Chat() {
		text, err := rp.c.Spell(ctx, rp.info.Model, serving.APIChat, req.Prompt, r.Input)
		req.Text = text
		return req, err
	}
	return req, nil
}

// fill records what stream s delivered: vllm bench's timings, the token
// counts, the cached tokens and whether the SLOs were met.
func (rp *Replayer) fill(row *results.Row, s serving.Stream) {
	ttft := s.TTFT.Seconds()
	row.Seconds, row.Status = ttft, results.StatusOK
	row.Set("outcome", OutcomeOK)
	row.Set(results.ColTTFT, ttft)
	tpot := math.NaN()
	d, why := s.TPOT(false)
	switch {
	case why == "":
		tpot = d.Seconds()
	case s.OutputTokens() >= 2:
		row.Reason = why // bundled: unmeasurable, said
	}
	row.Set("tpot_s", tpot)
	itl := results.Describe(seconds(s.ITL()))
	row.Set("itl_p50_s", itl.P50)
	row.Set("itl_p90_s", itl.P90)
	row.Set("e2e_s", s.E2E.Seconds())
	if s.Usage != nil {
		row.Set("prompt_tokens", s.Usage.PromptTokens)
	}
	row.Set(results.ColOutputTokens, s.OutputTokens())
	row.Set("token_counting", s.Counting)
	if n, src, ok := s.Cached(); ok {
		row.Set("cached_tokens", n)
		row.Set("cached_source", src)
	} else if l := rp.cfg.ServerLog; l != nil && s.Usage != nil {
		if n, why := l.Claim(s.Usage.PromptTokens); why == "" {
			row.Set("cached_tokens", n)
			row.Set("cached_source", serving.SourceServerLog)
		} else {
			row.Reason = strings.TrimPrefix(row.Reason+"; cached tokens unknown: "+why, "; ")
		}
	}
	if why := s.Impossible(); why != "" {
		row.Set(results.ColServerCheck, "impossible: "+why)
	}
	if rp.cfg.SLOTTFT > 0 || rp.cfg.SLOTPOT > 0 {
		met := rp.cfg.SLOTTFT <= 0 || s.TTFT <= rp.cfg.SLOTTFT
		// As vllm bench: a request without a TPOT (one output token) meets its SLO.
		met = met && (rp.cfg.SLOTPOT <= 0 || math.IsNaN(tpot) || tpot <= rp.cfg.SLOTPOT.Seconds())
		row.Set("slo_met", met)
	}
}

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}
