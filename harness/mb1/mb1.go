// Package mb1 runs MB1, the interference experiment: how long decode
// streams stall while the same server prefills a long prompt.
//
// A cell is (D decode streams, a prefill of P tokens, a rep). In each arm
// D streamed decodes run on the endpoint; their first tokens are a
// warm-up. After the inject delay one prefill of P unique tokens
// (max_tokens 1) is sent to the same endpoint (arm "interfere") or to a
// second instance (arm "control"); arm "baseline" sends none and looks at
// the same window the interfere arm's prefill took. Every token's arrival
// is kept. From them:
//
//	base TPOT        mean per-stream token gap before the injection
//	tokens during    tokens (all streams) in [inject, inject + prefill TTFT]
//	effective TPOT   prefill TTFT / (tokens during / D)
//	penalty          effective TPOT / base TPOT
//	benefit          prefill TTFT - tokens per stream × base TPOT
//
// (the protocol of the H20 reference measurements).
package mb1

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/results"
)

// Arms, in the order a cell runs them.
const (
	ArmInterfere = "interfere"
	ArmControl   = "control"
	ArmBaseline  = "baseline"
)

// A Config says what to run.
type Config struct {
	Endpoint        string // decodes, and the interfering prefill
	ControlEndpoint string // the control arm's prefill; "" for no control arm
	Model           string // "" = first of /v1/models
	Decode          []int  // D values
	Prefill         []int  // P values, tokens
	Reps            int
	ChunkLabel      string        // the server's chunked-prefill size, recorded only
	InjectAfter     time.Duration // from the start of the decodes to the prefill
	// DecodeTokens is the max_tokens of the decode streams; 0 sizes it
	// from the server's max_model_len. Streams are cancelled once the
	// window has closed, so a large value costs nothing.
	DecodeTokens int
	Warmup       int           // tokens per stream discarded as warm-up (32)
	Margin       time.Duration // decoding goes on this long after the window (InjectAfter/2)
	Seed         uint64
	Nonce        uint64 // 0: from the clock (a server keeps its cache between runs)
	Timeout      time.Duration
	Simulated    bool
	Log          io.Writer
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Endpoint == "" {
		errs = append(errs, errors.New("--endpoint is required (or --sim)"))
	}
	if len(c.Decode) == 0 {
		errs = append(errs, errors.New("--decode is empty"))
	}
	for _, d := range c.Decode {
		if d < 1 {
			errs = append(errs, fmt.Errorf("--decode %d: must be at least 1", d))
		}
	}
	if len(c.Prefill) == 0 {
		errs = append(errs, errors.New("--prefill is empty"))
	}
	for _, p := range c.Prefill {
		if p < 2 {
			errs = append(errs, fmt.Errorf("--prefill %d: too short", p))
		}
	}
	if c.Reps < 1 {
		errs = append(errs, fmt.Errorf("--reps %d: must be at least 1", c.Reps))
	}
	if c.InjectAfter <= 0 {
		errs = append(errs, fmt.Errorf("--inject-after %s: must be positive", c.InjectAfter))
	}
	if c.DecodeTokens < 0 {
		errs = append(errs, fmt.Errorf("--decode-tokens %d: must not be negative", c.DecodeTokens))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s: must be positive", c.Timeout))
	}
	return errors.Join(errs...)
}

// promptTokens is the length of each decode stream's prompt.
const promptTokens = 16

// minBase is how many tokens per stream past the warm-up the base window
// needs before the prefill is injected.
const minBase = 8

// A Runner runs MB1 against one server.
type Runner struct {
	cfg         Config
	c, control  *probe.Client
	model       string
	maxModelLen int
	simulated   bool
	nonce       uint64
}

// New checks the configuration, lists the models of the endpoint (and of
// the control endpoint), failing with an error wrapping
// probe.ErrUnreachable when one cannot be reached.
func New(ctx context.Context, cfg Config) (*Runner, error) {
	if cfg.Warmup == 0 {
		cfg.Warmup = 32
	}
	if cfg.Margin == 0 {
		cfg.Margin = cfg.InjectAfter / 2
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, nonce: cfg.Nonce}
	if r.nonce == 0 {
		r.nonce = uint64(time.Now().UnixNano())
	}
	var err error
	if r.c, err = probe.NewClient(cfg.Endpoint, cfg.Timeout); err != nil {
		return nil, err
	}
	// Decode streams run for as long as the cell does: no per-request
	// timeout on them; the prefill and /v1/models keep cfg.Timeout.
	models, err := r.c.Models(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", probe.ErrUnreachable, cfg.Endpoint, err)
	}
	m, ok := probe.PickModel(models, cfg.Model)
	if !ok {
		return nil, fmt.Errorf("%s serves no model (GET /v1/models is empty)", cfg.Endpoint)
	}
	r.model, r.maxModelLen = m.ID, m.MaxModelLen
	r.simulated = cfg.Simulated || r.c.Simulated()
	if cfg.ControlEndpoint != "" {
		if r.control, err = probe.NewClient(cfg.ControlEndpoint, cfg.Timeout); err != nil {
			return nil, fmt.Errorf("--control-endpoint: %w", err)
		}
		if _, err := r.control.Models(ctx); err != nil {
			return nil, fmt.Errorf("%w: control %s: %w", probe.ErrUnreachable, cfg.ControlEndpoint, err)
		}
	}
	return r, nil
}

// Model returns the model the runner drives.
func (r *Runner) Model() string { return r.model }

// Simulated reports whether the server is a kvtier sim.
func (r *Runner) Simulated() bool { return r.simulated }

// Run runs every cell, writing one row per arm to rows and every token's
// arrival to tokens, as each arm ends. A failed arm is an error row and
// the run goes on. It stops early, keeping what it wrote, when ctx ends.
func (r *Runner) Run(ctx context.Context, rows, tokens results.Sink) error {
	for _, p := range r.cfg.Prefill {
		for _, d := range r.cfg.Decode {
			for rep := range r.cfg.Reps {
				if err := r.cell(ctx, d, p, rep, rows, tokens); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (r *Runner) cell(ctx context.Context, d, p, rep int, rows, tokens results.Sink) error {
	arms := []string{ArmInterfere}
	if r.control != nil {
		arms = append(arms, ArmControl)
	}
	arms = append(arms, ArmBaseline)
	var window float64 // the interfere arm's prefill TTFT
	for _, arm := range arms {
		if err := ctx.Err(); err != nil {
			return err
		}
		a := arm
		res := r.arm(ctx, a, d, p, rep, window)
		if err := ctx.Err(); err != nil {
			return err // interrupted mid-arm: nothing whole to write
		}
		if a == ArmInterfere && res.err == nil {
			window = res.prefillTTFT
		}
		row := r.row(res)
		r.log(row)
		if err := rows.Write(row); err != nil {
			return err
		}
		for _, t := range res.tokenRows(r.cfg.Endpoint) {
			if err := tokens.Write(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// armResult is what one arm measured; times are seconds since the arm
// started.
type armResult struct {
	arm         string
	d, p, rep   int
	times       [][]float64 // per stream, every token
	inject      float64
	prefillTTFT float64 // interfere, control: measured; baseline: the window borrowed
	done        float64 // inject + prefillTTFT; NaN for baseline
	note        string
	err         error
	skip        string
}

func (r *Runner) decodeTokens() int {
	if r.cfg.DecodeTokens > 0 {
		return r.cfg.DecodeTokens
	}
	if r.maxModelLen > promptTokens+1 {
		return r.maxModelLen - promptTokens - 1
	}
	return 8192
}

func (r *Runner) prompt(purpose string, n int) ([]int, string) {
	h := probe.PurposeHash(purpose)
	return probe.TokenIDs(r.cfg.Seed^r.nonce, h, n), fmt.Sprintf("kvtier-mb1-%x-%x", r.nonce, h)
}

// arm runs the decodes of one arm, injects its prefill (none for the
// baseline, whose window is the interfere arm's prefill TTFT) and
// collects the token times.
func (r *Runner) arm(ctx context.Context, arm string, d, p, rep int, window float64) armResult {
	res := armResult{arm: arm, d: d, p: p, rep: rep, done: math.NaN()}
	if arm == ArmBaseline && window <= 0 {
		res.skip = "no window: the interfere arm of this cell has no prefill TTFT"
		return res
	}
	id := fmt.Sprintf("kvtier-mb1-%d-%s-d%d-p%d-%d", r.cfg.Seed, arm, d, p, rep)
	sctx, stop := context.WithCancel(ctx)
	defer stop()

	var mu sync.Mutex
	times := make([][]float64, d)
	ended := make([]bool, d)
	errs := make([]error, d)
	var wg sync.WaitGroup
	t0 := time.Now()
	since := func() float64 { return time.Since(t0).Seconds() }
	stream := probe.Client{Base: r.c.Base} // no per-request timeout
	for i := range d {
		ids, salt := r.prompt(fmt.Sprintf("%s-s%d", id, i), promptTokens)
		req := probe.Request{Model: r.model, Prompt: ids, MaxTokens: r.decodeTokens(), Salt: salt, RequestID: fmt.Sprintf("%s-s%d", id, i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := stream.Stream(sctx, req, func(time.Duration) {
				t := since()
				mu.Lock()
				times[i] = append(times[i], t)
				mu.Unlock()
			})
			mu.Lock()
			ended[i] = true
			if sctx.Err() == nil {
				errs[i] = err
				if err == nil {
					res.note = fmt.Sprintf("decode stream %d ended after %d tokens before the window closed: raise --decode-tokens", i, len(times[i]))
				}
			}
			mu.Unlock()
		}()
	}
	finish := func() {
		stop()
		wg.Wait()
		mu.Lock()
		res.times = times
		mu.Unlock()
	}
	// Wait for every stream to pass its warm-up and a few base tokens,
	// and for the inject delay.
	need := r.cfg.Warmup + minBase
	for {
		mu.Lock()
		ready, failed := true, error(nil)
		for i := range d {
			if len(times[i]) < need {
				ready = false
			}
			if ended[i] && failed == nil {
				failed = errs[i]
				if failed == nil {
					failed = fmt.Errorf("decode stream %d ended after %d tokens, before its warm-up of %d", i, len(times[i]), need)
				}
			}
		}
		mu.Unlock()
		if failed != nil {
			finish()
			res.err = fmt.Errorf("decode streams: %w", failed)
			return res
		}
		if ready && time.Since(t0) >= r.cfg.InjectAfter {
			break
		}
		if time.Since(t0) > r.cfg.InjectAfter+r.cfg.Timeout {
			finish()
			res.err = fmt.Errorf("decode streams did not reach %d tokens each within %s", need, r.cfg.InjectAfter+r.cfg.Timeout)
			return res
		}
		if ctx.Err() != nil {
			finish()
			res.err = ctx.Err()
			return res
		}
		time.Sleep(time.Millisecond)
	}
	res.inject = since()
	var end float64
	switch arm {
	case ArmBaseline:
		res.prefillTTFT = window
		end = res.inject + window
	default:
		c := r.c
		if arm == ArmControl {
			c = r.control
		}
		ids, salt := r.prompt(id+"-prefill", p)
		s, err := c.Stream(ctx, probe.Request{Model: r.model, Prompt: ids, MaxTokens: 1, Salt: salt, RequestID: id + "-prefill"}, nil)
		if err != nil {
			finish()
			res.err = fmt.Errorf("prefill of %d tokens: %w", p, err)
			return res
		}
		res.prefillTTFT = s.TTFT.Seconds()
		res.done = res.inject + res.prefillTTFT
		end = res.done
	}
	// Keep decoding past the window so its last gap is seen whole.
	wait := time.Until(t0.Add(time.Duration((end)*float64(time.Second)) + r.cfg.Margin))
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	finish()
	for i, e := range errs {
		if e != nil {
			res.err = fmt.Errorf("decode stream %d: %w", i, e)
			break
		}
	}
	return res
}

// stats are an arm's figures; NaN where they do not exist.
type stats struct {
	baseTPOT, tokensDuring, perStream, effTPOT float64
	itlP50During, itlP90During, itlP50, itlP90 float64
	penalty, benefit                           float64
}

// compute derives an arm's figures from its token times.
func compute(times [][]float64, warmup int, inject, window float64) stats {
	st := stats{}
	var tpots, baseGaps, duringGaps []float64
	during := 0
	end := inject + window
	for _, ts := range times {
		if len(ts) > warmup {
			ts = ts[warmup:]
		} else {
			ts = nil
		}
		var base []float64
		for _, t := range ts {
			if t < inject {
				base = append(base, t)
			}
			if t >= inject && t <= end {
				during++
			}
		}
		if len(base) >= 2 {
			tpots = append(tpots, (base[len(base)-1]-base[0])/float64(len(base)-1))
			for i := 1; i < len(base); i++ {
				baseGaps = append(baseGaps, base[i]-base[i-1])
			}
		}
		for i := 1; i < len(ts); i++ {
			if ts[i] > inject && ts[i-1] < end {
				duringGaps = append(duringGaps, ts[i]-ts[i-1])
			}
		}
	}
	st.baseTPOT = mean(tpots)
	st.tokensDuring = float64(during)
	st.perStream = float64(during) / float64(len(times))
	st.effTPOT = math.NaN()
	if during > 0 {
		st.effTPOT = window / st.perStream
	}
	st.penalty = st.effTPOT / st.baseTPOT
	st.benefit = window - st.perStream*st.baseTPOT
	st.itlP50During, st.itlP90During = quantile(duringGaps, 0.5), quantile(duringGaps, 0.9)
	st.itlP50, st.itlP90 = quantile(baseGaps, 0.5), quantile(baseGaps, 0.9)
	return st
}

func mean(xs []float64) float64 { return results.Describe(xs).Mean }

// quantile is the q-quantile of xs (NaN if empty), as every kvtier
// summary computes it.
func quantile(xs []float64, q float64) float64 {
	return results.Quantile(results.Describe(xs).Values, q)
}

func (r *Runner) row(res armResult) results.Row {
	row := results.NewRow("mb1")
	row.Backend, row.Transport, row.Model, row.Rep = "http", "http", r.model, res.rep
	row.Set("endpoint", r.cfg.Endpoint)
	row.Set("simulated", r.simulated)
	row.Set("arm", res.arm)
	row.Set("decode_streams", res.d)
	row.Set("prefill_tokens", res.p)
	row.Set("chunk_label", r.cfg.ChunkLabel)
	switch {
	case res.skip != "":
		row.Skip(res.skip)
		return row
	case res.err != nil:
		row.Fail(res.err)
		return row
	}
	st := compute(res.times, r.cfg.Warmup, res.inject, res.prefillTTFT)
	if res.arm == ArmBaseline {
		// No prefill: the row's time is not a TTFT.
		row.Status = results.StatusOK
	} else {
		row.SetTime(res.prefillTTFT)
		row.Set("prefill_ttft_s", res.prefillTTFT)
	}
	row.Set("base_tpot_s", st.baseTPOT)
	row.Set("tokens_during", int(st.tokensDuring))
	row.Set("tokens_per_stream_during", st.perStream)
	row.Set("eff_tpot_s", st.effTPOT)
	row.Set("itl_p50_during_s", st.itlP50During)
	row.Set("itl_p90_during_s", st.itlP90During)
	row.Set("itl_p50_base_s", st.itlP50)
	row.Set("itl_p90_base_s", st.itlP90)
	row.Set("penalty", st.penalty)
	row.Set("benefit_s", st.benefit)
	var notes []string
	if res.arm == ArmBaseline {
		notes = append(notes, fmt.Sprintf("window %.6g s from the interfere arm's prefill TTFT", res.prefillTTFT))
	}
	if st.tokensDuring == 0 {
		notes = append(notes, "no decode token arrived during the window: effective TPOT unbounded")
	}
	if math.IsNaN(st.baseTPOT) {
		notes = append(notes, "too few tokens before the injection for a base TPOT: raise --inject-after")
	}
	if res.note != "" {
		notes = append(notes, res.note)
	}
	row.Reason = strings.Join(notes, "; ")
	return row
}

// tokenRows returns one mb1_tokens.csv row per token of the arm.
func (res armResult) tokenRows(endpoint string) []results.Row {
	var out []results.Row
	for s, ts := range res.times {
		for i, t := range ts {
			row := results.Row{Suite: "mb1", Rep: res.rep, Status: results.StatusOK}
			row.Set("endpoint", endpoint)
			row.Set("arm", res.arm)
			row.Set("decode_streams", res.d)
			row.Set("prefill_tokens", res.p)
			row.Set("stream", s)
			row.Set("index", i)
			row.Set("t_s", t)
			row.Set("inject_s", res.inject)
			row.Set("prefill_done_s", res.done)
			out = append(out, row)
		}
	}
	return out
}

func (r *Runner) log(row results.Row) {
	if r.cfg.Log == nil {
		return
	}
	what := string(row.Status)
	if row.Status == results.StatusOK {
		ms := func(col string) string { return fmt.Sprintf("%.3g ms", 1e3*row.Float(col)) }
		what = "base TPOT " + ms("base_tpot_s")
		if row.Get("prefill_ttft_s") != "" {
			what += ", prefill TTFT " + ms("prefill_ttft_s")
		}
		what += fmt.Sprintf(", tokens/stream during %.3g, eff. TPOT %s, penalty %.3g",
			row.Float("tokens_per_stream_during"), ms("eff_tpot_s"), row.Float("penalty"))
	}
	if row.Reason != "" {
		what += " (" + row.Reason + ")"
	}
	fmt.Fprintf(r.cfg.Log, "mb1 %-9s D=%d P=%s rep %d: %s\n", row.Get("arm"), atoi(row.Get("decode_streams")), row.Get("prefill_tokens"), row.Rep, what)
}

func atoi(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}
