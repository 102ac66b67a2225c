// Package mb1 runs MB1, the interference experiment: how long decode
// streams stall while the same server prefills a long prompt.
//
// A cell is (D decode streams, a prefill of P tokens, a rep). In each arm
// D streamed decodes run on the endpoint; their first tokens are a
// warm-up. After the inject delay one prefill of P unique tokens
// (max_tokens 1) is sent to the same endpoint (arm "interfere") or to a
// second instance (arm "control"); arm "baseline" sends none and looks at
// the same window the interfere arm's prefill took. Every token's arrival
// is kept: tokens are counted as the server reports them
// (continuous_usage_stats' running completion_tokens, or return_token_ids)
// so a chunk that bundles several counts them all; a server that offers
// neither is counted by chunks, and the rows say which. From them, as the
// protocol of the H20 reference measurements (docs/reference.md) defines:
//
//	tokens during     tokens (all streams) in [inject, inject + prefill TTFT]
//	effective TPOT    prefill TTFT / (tokens during / D)
//	base TPOT         the baseline arm's effective TPOT over the same
//	                  window (the protocol's); also each arm's mean
//	                  per-stream token gap before the injection
//	penalty           effective TPOT / base TPOT
//	benefit           prefill TTFT - tokens per stream × base TPOT
package mb1

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/internal/wait"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/units"
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
	API             string // completions (default) | chat: of the decodes and the prefill
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
	// Idle fails a request whose server sends nothing for that long
	// (serving.Client.Idle); a decode stream may stall up to Timeout once
	// the prefill is sent (that stall is what MB1 measures); 0 none.
	Idle time.Duration
	// MaxTimeouts stops the suite after that many consecutive requests
	// timed out (serving.Client.SetMaxTimeouts); 0 never.
	MaxTimeouts int
	// ServerLog is the server's log (--server-log): where the server
	// does not say how many sequences it runs at once (Client.Slots),
	// its log may (Ollama's --parallel); nil none.
	ServerLog *serving.ServerLog
	Simulated bool
	HTTP      *http.Client // nil: a client of its own
	Log       io.Writer
	// Weights are the estimated seconds of each cell (prefill, then
	// decode), for the progress's ETA; nil weighs them alike.
	Weights []float64
}

// Validate reports every problem with c at once, each naming its field
// (option.Error).
func (c Config) Validate() error {
	var errs []error
	if c.Endpoint == "" && !c.Simulated {
		errs = append(errs, option.Errorf("base-url", "required"))
	}
	errs = append(errs, serving.CheckCounts("decode", c.Decode, 1, MaxStreams, "streams")...)
	errs = append(errs, serving.CheckCounts("prefill", c.Prefill, 2, serving.MaxPromptTokens, "tokens")...)
	errs = append(errs, option.Range("reps", c.Reps, 1, serving.MaxReps),
		option.Positive("inject-after", c.InjectAfter),
		option.Range("decode-tokens", c.DecodeTokens, 0, serving.MaxPromptTokens, "0: up to max_model_len"),
		option.Range("max-timeouts", c.MaxTimeouts, 0, serving.MaxReps, "0: never"))
	errs = append(errs, serving.CheckTimeouts(c.Timeout, c.Idle)...)
	errs = append(errs, serving.CheckAPI(c.API))
	return errors.Join(errs...)
}

// MaxStreams bounds the decode streams of a cell (D).
const MaxStreams = 4096

// promptTokens is the length of each decode stream's prompt.
const promptTokens = 16

// minBase is how many tokens per stream past the warm-up the base window
// needs before the prefill is injected.
const minBase = 8

// A Runner runs MB1 against one server.
type Runner struct {
	cfg         Config
	c, control  *serving.Client
	streams     *serving.Client // the endpoint without a per-request timeout
	prompts     *serving.Prompter
	model       string
	maxModelLen int
	simulated   bool
	version     string
	family      serving.Family
	slots       serving.Slots
	longest     map[int]time.Duration // P: the longest TTFT its prefill had (admitBound)
	unadmitted  map[int]int           // P: the D whose prefill was not admitted
}

// New checks the configuration, lists the models of the endpoint (and of
// the control endpoint), failing with an error wrapping
// serving.ErrUnreachable when one cannot be reached, and reads the
// server's version.
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
	r := &Runner{cfg: cfg, longest: map[int]time.Duration{}, unadmitted: map[int]int{}}
	var err error
	if r.c, err = r.client(cfg.Endpoint); err != nil {
		return nil, err
	}
	m, err := r.c.ServedModel(ctx, cfg.Model)
	if err != nil {
		return nil, err
	}
	r.model, r.maxModelLen = m.ID, m.MaxModelLen
	r.simulated = cfg.Simulated || r.c.Simulated()
	r.streams = r.c.With(0, max(cfg.Idle, cfg.Timeout))
	r.family = r.c.DetectFamily(ctx)
	r.slots = r.c.Slots(ctx)
	if v, err := r.c.Version(ctx); err == nil {
		r.version = v
	} else {
		r.version = r.family.Version
	}
	nonce := cfg.Nonce
	if nonce == 0 {
		nonce = uint64(time.Now().UnixNano()) // a nonce for unique prompts, not a duration
	}
	r.prompts = &serving.Prompter{Seed: cfg.Seed, Nonce: nonce, API: cfg.API, Client: r.c, Model: r.model}
	if cfg.ControlEndpoint != "" {
		if r.control, err = r.client(cfg.ControlEndpoint); err != nil {
			return nil, fmt.Errorf("--control-endpoint: %w", err)
		}
		if _, err := r.control.Models(ctx); err != nil {
			return nil, fmt.Errorf("%w: control %s: %w", serving.ErrUnreachable, redact.URL(cfg.ControlEndpoint), err)
		}
	}
	return r, nil
}

// client returns a client of endpoint whose requests are bounded by
// --timeout (the decode streams use r.streams, which is not: they run for
// as long as the cell does).
func (r *Runner) client(endpoint string) (*serving.Client, error) {
	return serving.NewMeasuringClient(endpoint, r.cfg.Timeout, r.cfg.Idle, r.cfg.HTTP, r.cfg.MaxTimeouts)
}

// Model returns the model the runner drives.
func (r *Runner) Model() string { return r.model }

// Simulated reports whether the server is a kvtier sim.
func (r *Runner) Simulated() bool { return r.simulated }

// Version returns what the server's GET /version said ("" unknown).
func (r *Runner) Version() string { return r.version }

// Family returns the server's family (serving.Client.DetectFamily).
func (r *Runner) Family() serving.Family { return r.family }

// Run runs every cell, writing one row per arm to rows and every token's
// arrival to tokens, as each cell ends (the interfere row needs the
// baseline arm's base TPOT). A failed arm is an error row and the run
// goes on. It stops early, keeping what it wrote and writing the arms of
// the interrupted cell that had finished, when ctx ends.
func (r *Runner) Run(ctx context.Context, rows, tokens results.Sink) error {
	pr := harness.ProgressOf(r.cfg.Log)
	pr.PlanEstimated(len(r.cfg.Prefill)*len(r.cfg.Decode), r.cfg.Weights)
	for _, p := range r.cfg.Prefill {
		for _, d := range r.cfg.Decode {
			pr.Begin(fmt.Sprintf("D=%d P=%d", d, p))
			what, err := r.reps(ctx, d, p, rows, tokens)
			if err != nil {
				return err
			}
			pr.End(what)
		}
	}
	return r.c.Tripped()
}

// reps runs the reps of cell (d, p), writing skipped rows for those it
// refuses (refusal: at the start, or once a rep's prefill was not
// admitted); it returns what the progress says of the cell.
func (r *Runner) reps(ctx context.Context, d, p int, rows, tokens results.Sink) (string, error) {
	pr := harness.ProgressOf(r.cfg.Log)
	for rep := range r.cfg.Reps {
		if why := r.refusal(d, p); why != "" {
			return "refused", r.refuse(d, p, rep, why, rows)
		}
		pr.Rep(rep, r.cfg.Reps)
		if err := r.cell(ctx, d, p, rep, rows, tokens); err != nil {
			return "", err
		}
	}
	return "", nil
}

func (r *Runner) cell(ctx context.Context, d, p, rep int, rows, tokens results.Sink) error {
	var done []armResult
	var window float64 // the interfere arm's prefill TTFT
	var stopped error
	for _, arm := range r.arms() {
		if stopped = ctx.Err(); stopped != nil {
			break
		}
		res := r.timedArm(ctx, arm, d, p, rep, window)
		if stopped = ctx.Err(); stopped != nil {
			break // interrupted mid-arm: nothing whole to write
		}
		if res.err != nil && serving.Skipped(res.err) {
			res.skip, res.err = res.err.Error(), nil // the breaker tripped: not measured
		}
		if arm == ArmInterfere && res.err == nil {
			window = res.prefillTTFT
		}
		done = append(done, res)
	}
	if err := r.write(done, rows, tokens); err != nil {
		return err
	}
	return stopped
}

// timedArm runs an arm; against kvtier sim it also records how much
// further the sim fell behind real time meanwhile (its
// kvtier_sim_lag_seconds before and after).
func (r *Runner) timedArm(ctx context.Context, arm string, d, p, rep int, window float64) armResult {
	if !r.simulated {
		return r.arm(ctx, arm, d, p, rep, window)
	}
	before, berr := r.c.Metrics(ctx, r.model)
	res := r.arm(ctx, arm, d, p, rep, window)
	if after, err := r.c.Metrics(ctx, r.model); berr == nil && err == nil {
		if d := serving.Sub(before, after); d.SimLagFound {
			res.simLag = d.SimLag
		}
	}
	return res
}

// write computes the rows of a cell's finished arms, each against the
// baseline arm's base when it ran, and writes them with their tokens.
func (r *Runner) write(done []armResult, rows, tokens results.Sink) error {
	base := math.NaN()
	for _, res := range done {
		if res.arm == ArmBaseline && res.err == nil && res.skip == "" {
			base = compute(res.streams, r.cfg.Warmup, res.inject, res.prefillTTFT).effTPOT
		}
	}
	for _, res := range done {
		row := r.row(res, base)
		r.log(row)
		if err := rows.Write(row); err != nil {
			return err
		}
		for _, t := range res.tokenRows(redact.URL(r.cfg.Endpoint)) {
			if err := tokens.Write(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// An arrival is one choice chunk of a decode stream: when it came,
// seconds since the arm started, and how many tokens it carried.
type arrival struct {
	t float64
	n int
}

// armResult is what one arm measured; times are seconds since the arm
// started.
type armResult struct {
	arm         string
	d, p, rep   int
	streams     [][]arrival // per stream, every chunk
	counting    string      // how tokens were counted: the weakest of the streams
	inject      float64
	prefillTTFT float64 // interfere, control: measured; baseline: the window borrowed
	done        float64 // inject + prefillTTFT; NaN for baseline
	prompt      int     // the prefill's prompt tokens as the server reported them; 0 unknown
	form        string  // the form the prefill's prompt went in
	promptNote  string  // how the prefill's prompt was sized, when not exactly
	impossible  string  // why figures the server reported of the prefill cannot be true
	note        string
	err         error
	skip        string
	// simLag is how much further kvtier sim fell behind real time during
	// the arm (its kvtier_sim_lag_seconds rose by); NaN where the server
	// is no sim or its /metrics could not be read.
	simLag float64
}

func (r *Runner) decodeTokens() int {
	if r.cfg.DecodeTokens > 0 {
		return r.cfg.DecodeTokens
	}
	// A chat template adds a few tokens to the prompt.
	if n := r.maxModelLen - promptTokens - 32; n > 0 {
		return n
	}
	return 8192
}

// weaker returns the weaker of two ways of counting tokens.
func weaker(a, b string) string {
	rank := map[string]int{serving.CountTokenIDs: 1, serving.CountUsage: 2, serving.CountChunks: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// A decode stream's chunks are kept up to maxBurstChunks plus one per
// minChunkGap it has run: no decode streams faster (10,000 chunks a
// second a stream), so a server that does (one that sends its whole
// max_tokens at once) is cut there, its arm an error row, rather than
// filling mb1_tokens.csv up to the context length in every cell.
const (
	maxBurstChunks = 4096
	minChunkGap    = 100 * time.Microsecond
)

// decodes are the D streams of one arm, recording every chunk.
type decodes struct {
	clock    harness.Stopwatch
	stop     context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	streams  [][]arrival
	tokens   []int // per stream, counted
	ended    []bool
	endAt    []float64 // when each stream ended, on clock
	errs     []error
	cut      []error // per stream, why it was cut (record)
	counting string
	note     string
}

func (ds *decodes) since() float64 { return ds.clock.Seconds() }

// startDecodes starts d decode streams on r's endpoint.
func (r *Runner) startDecodes(ctx context.Context, id string, d int) (*decodes, error) {
	sctx, stop := context.WithCancel(ctx)
	ds := &decodes{clock: harness.StartStopwatch(), stop: stop, streams: make([][]arrival, d), tokens: make([]int, d), ended: make([]bool, d), endAt: make([]float64, d), errs: make([]error, d), cut: make([]error, d)}
	for i := range d {
		sid := fmt.Sprintf("%s-s%d", id, i)
		pr, err := r.prompts.Make(ctx, sid, promptTokens, false)
		if err != nil {
			stop()
			ds.wg.Wait()
			return nil, err
		}
		req := r.prompts.Request(pr, r.decodeTokens(), sid)
		req.CountTokens = true
		ds.wg.Go(func() {
			cctx, cut := context.WithCancel(sctx)
			defer cut()
			s, err := r.streams.Stream(cctx, req, func(c serving.Chunk) { ds.record(i, c, cut) })
			ds.mu.Lock()
			defer ds.mu.Unlock()
			ds.ended[i], ds.endAt[i] = true, ds.since()
			if s.Counting != "" {
				ds.counting = weaker(ds.counting, s.Counting)
			}
			if ds.cut[i] != nil {
				ds.errs[i] = ds.cut[i]
			} else if sctx.Err() == nil {
				ds.errs[i] = err
				if err == nil {
					ds.note = fmt.Sprintf("decode stream %d ended after %d tokens before the window closed: raise --decode-tokens", i, ds.tokens[i])
				}
			}
		})
	}
	return ds, nil
}

// record keeps chunk c of stream i, arriving now, unless the stream
// streams faster than any decode: then it is cut (cancelled by cut) and
// keeps nothing more.
func (ds *decodes) record(i int, c serving.Chunk, cut context.CancelFunc) {
	t := ds.since()
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.cut[i] != nil {
		return
	}
	if n := len(ds.streams[i]); n >= maxBurstChunks+int(t/minChunkGap.Seconds()) {
		ds.cut[i] = fmt.Errorf("%d chunks in %s, faster than any decode (more than one per %s after the first %d): cut there, as kvtier keeps no more of a stream (mb1_tokens.csv)",
			n, units.FormatSeconds(t), minChunkGap, maxBurstChunks)
		cut()
		return
	}
	ds.streams[i] = append(ds.streams[i], arrival{t, c.Tokens})
	ds.tokens[i] += c.Tokens
}

// finish cancels the streams and moves what they recorded into res.
func (ds *decodes) finish(res *armResult) {
	ds.stop()
	ds.wg.Wait()
	ds.mu.Lock()
	defer ds.mu.Unlock()
	res.streams, res.counting, res.note = ds.streams, ds.counting, ds.note
	for i, e := range ds.errs {
		if e != nil && res.err == nil {
			res.err = fmt.Errorf("decode stream %d: %w", i, e)
		}
	}
}

// ready reports whether every stream has passed need tokens, and the
// first failure: a stream that ended, or one silent for idle (before
// the prefill, a stall is not what is measured).
func (ds *decodes) ready(need int, idle time.Duration) (bool, error) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	ready, now := true, ds.since()
	if err := ds.serial(need); err != nil {
		return false, err
	}
	for i, arr := range ds.streams {
		if ds.tokens[i] < need {
			ready = false
		}
		if ds.ended[i] {
			if ds.errs[i] != nil {
				return ready, fmt.Errorf("decode stream %d: %w", i, ds.errs[i])
			}
			return ready, fmt.Errorf("decode stream %d ended after %d tokens, before its warm-up of %d", i, ds.tokens[i], need)
		}
		last := 0.0
		if len(arr) > 0 {
			last = arr[len(arr)-1].t
		}
		if idle > 0 && now-last > idle.Seconds() {
			return ready, fmt.Errorf("decode stream %d: %w", i, &serving.IdleError{Wait: "token", Idle: idle})
		}
	}
	return ready, nil
}

// ErrSerializing is the error of an arm whose server runs one request
// at a time: there is no interference to measure.
var ErrSerializing = errors.New("the server serializes requests (one at a time, as Ollama with OLLAMA_NUM_PARALLEL=1): MB1 measures interference between concurrent requests and there is none")

// serial reports a server that serves the streams one at a time: one
// stream has four times its warm-up while another received nothing.
// ds.mu is held.
func (ds *decodes) serial(need int) error {
	lead, idle := -1, -1
	for i, n := range ds.tokens {
		if n >= 4*max(need, 1) && lead < 0 {
			lead = i
		}
		if n == 0 && idle < 0 {
			idle = i
		}
	}
	if lead < 0 || idle < 0 {
		return nil
	}
	return fmt.Errorf("%w: decode stream %d received %d tokens while stream %d received none", ErrSerializing, lead, ds.tokens[lead], idle)
}

// waitReady waits until every stream has passed its warm-up and a few
// base tokens and the inject delay has passed; it fails when a stream
// ends or stalls first.
func (r *Runner) waitReady(ctx context.Context, ds *decodes) error {
	need := r.cfg.Warmup + minBase
	for {
		ready, failed := ds.ready(need, r.cfg.Idle)
		elapsed := ds.clock.Elapsed()
		switch {
		case failed != nil:
			return fmt.Errorf("decode streams: %w", failed)
		case ready && elapsed >= r.cfg.InjectAfter:
			return nil
		case elapsed > r.cfg.InjectAfter+r.cfg.Timeout:
			return fmt.Errorf("decode streams did not reach %d tokens each within %s", need, r.cfg.InjectAfter+r.cfg.Timeout)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		time.Sleep(time.Millisecond)
	}
}

// arm runs the decodes of one arm, injects its prefill (none for the
// baseline, whose window is the interfere arm's prefill TTFT) and
// collects the token arrivals. The window starts when the prefill is
// sent; its prompt is ready before.
func (r *Runner) arm(ctx context.Context, arm string, d, p, rep int, window float64) armResult {
	res := armResult{arm: arm, d: d, p: p, rep: rep, done: math.NaN(), simLag: math.NaN()}
	if err := r.c.Tripped(); err != nil {
		res.skip = err.Error()
		return res
	}
	if arm == ArmBaseline && window <= 0 {
		res.skip = "no window: the interfere arm of this cell has no prefill TTFT"
		return res
	}
	id := fmt.Sprintf("kvtier-mb1-%d-%s-d%d-p%d-%d", r.cfg.Seed, arm, d, p, rep)
	if arm == ArmInterfere {
		r.admitBound(ctx, p)
	}
	var pre serving.Request
	if arm != ArmBaseline {
		pr, err := r.prompts.Make(ctx, id+"-prefill", p, true)
		if err != nil {
			res.err = fmt.Errorf("prefill prompt: %w", err)
			return res
		}
		pre = r.prompts.Request(pr, 1, id+"-prefill")
		res.promptNote = pr.Note
	}
	ds, err := r.startDecodes(ctx, id, d)
	if err != nil {
		res.err = fmt.Errorf("decode prompts: %w", err)
		return res
	}
	if err := r.waitReady(ctx, ds); err != nil {
		ds.finish(&res)
		res.err = err
		return res
	}
	res.inject, res.prefillTTFT = ds.since(), window
	if arm != ArmBaseline {
		if err := r.inject(ctx, &res, ds, pre); err != nil {
			ds.finish(&res)
			res.err = err
			return res
		}
	}
	// Keep decoding past the window so its last gap is seen whole.
	end := res.inject + res.prefillTTFT
	wait.Until(ctx, ds.clock.At(time.Duration(end*float64(time.Second))+r.cfg.Margin))
	ds.finish(&res)
	return res
}

// inject sends the arm's prefill while ds decode and records its TTFT,
// the prompt the server saw and the form it went in; the error is the
// prefill's, a prompt the server cut, or a decode that ended before the
// prefill's first token (endedBefore).
func (r *Runner) inject(ctx context.Context, res *armResult, ds *decodes, pre serving.Request) error {
	pctx, bound := ctx, time.Duration(0)
	if res.arm == ArmInterfere {
		if bound = r.admitBound(ctx, res.p); bound > 0 {
			var cancel context.CancelFunc
			pctx, cancel = context.WithTimeout(ctx, bound)
			defer cancel()
		}
	}
	s, err := r.prefill(pctx, res.arm, pre)
	if err != nil && ctx.Err() == nil && pctx.Err() != nil {
		return r.notAdmitted(res.d, res.p, bound)
	}
	res.form = s.Form
	if s.Usage != nil {
		res.prompt = s.Usage.PromptTokens
	}
	if err == nil {
		err = s.PromptCheck()
	}
	// A figure no server holds is left out, said in server_check; the
	// TTFT measured stays.
	res.impossible = s.Impossible()
	if err != nil {
		return fmt.Errorf("prefill of %d tokens: %w", res.p, err)
	}
	ttft := s.TTFT.Seconds()
	res.prefillTTFT, res.done = ttft, res.inject+ttft
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if err := endedBefore(res.arm, res.done, ds.ended, ds.endAt); err != nil {
		return err
	}
	if res.arm == ArmInterfere {
		r.admitted(res.p, s.TTFT)
	}
	return nil
}

// prefill sends the arm's prefill (to the control instance for the
// control arm) and returns its stream.
func (r *Runner) prefill(ctx context.Context, arm string, req serving.Request) (serving.Stream, error) {
	c := r.c
	if arm == ArmControl {
		c = r.control
	}
	return c.Stream(ctx, req, nil)
}

// stats are an arm's figures; NaN where they do not exist.
type stats struct {
	baseTPOT, tokensDuring, perStream, effTPOT float64
	itlP50During, itlP90During, itlP50, itlP90 float64
}

// tokenTimes expands a stream's chunks into one arrival time per token,
// the first warmup tokens dropped.
func tokenTimes(chunks []arrival, warmup int) []float64 {
	var ts []float64
	for _, c := range chunks {
		for range c.n {
			ts = append(ts, c.t)
		}
	}
	if len(ts) <= warmup {
		return nil
	}
	return ts[warmup:]
}

// compute derives an arm's figures from its chunk arrivals: tokens are
// counted as the chunks carried them; the inter-token latencies are, as
// vllm bench's, gaps between chunks.
func compute(streams [][]arrival, warmup int, inject, window float64) stats {
	var st stats
	var tpots, baseGaps, duringGaps []float64
	during := 0
	end := inject + window
	for _, chunks := range streams {
		ts := tokenTimes(chunks, warmup)
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
		}
		if len(ts) == 0 {
			continue
		}
		b, d := chunkGaps(chunks, ts[0], inject, end)
		baseGaps, duringGaps = append(baseGaps, b...), append(duringGaps, d...)
	}
	st.baseTPOT = mean(tpots)
	st.tokensDuring = float64(during)
	st.perStream = float64(during) / float64(len(streams))
	st.effTPOT = math.NaN()
	if during > 0 {
		st.effTPOT = window / st.perStream
	}
	st.itlP50During, st.itlP90During = quantile(duringGaps, 0.5), quantile(duringGaps, 0.9)
	st.itlP50, st.itlP90 = quantile(baseGaps, 0.5), quantile(baseGaps, 0.9)
	return st
}

// chunkGaps returns the gaps between a stream's chunks from the first
// one after the warm-up (at from): those before the injection, and those
// overlapping [inject, end].
func chunkGaps(chunks []arrival, from, inject, end float64) (base, during []float64) {
	for i := 1; i < len(chunks); i++ {
		a, b := chunks[i-1].t, chunks[i].t
		if a < from {
			continue
		}
		switch {
		case b < inject:
			base = append(base, b-a)
		case b > inject && a < end:
			during = append(during, b-a)
		}
	}
	return base, during
}

func mean(xs []float64) float64 { return results.Describe(xs).Mean }

// quantile is the q-quantile of xs (NaN if empty), as every kvtier
// summary computes it.
func quantile(xs []float64, q float64) float64 {
	return results.Quantile(results.Describe(xs).Values, q)
}

// row turns an arm's arrivals into its mb1.csv row. base is the
// baseline arm's effective TPOT over the same window (the protocol's
// base TPOT), NaN when the baseline arm did not run.
func (r *Runner) row(res armResult, base float64) results.Row {
	row := results.NewRow("mb1")
	row.Backend, row.Transport, row.Model, row.Rep = "http", "http", r.model, res.rep
	row.Set(results.ColEndpoint, redact.URL(r.cfg.Endpoint))
	row.Set(results.ColSimulated, r.simulated)
	row.Set(results.ColArm, res.arm)
	row.Set(results.ColDecodeStreams, res.d)
	row.Set(results.ColPrefillTokens, res.p)
	row.Set(results.ColChunkLabel, r.cfg.ChunkLabel)
	row.Set("api", r.api())
	row.Set("server_version", r.version)
	row.Set("server_family", r.family.Name)
	if res.prompt > 0 {
		row.Set("prompt_tokens", res.prompt)
	}
	row.Set("prompt_form", res.form)
	if res.impossible != "" {
		row.Set(results.ColServerCheck, "impossible: "+res.impossible)
	}
	switch {
	case res.skip != "":
		row.Skip(res.skip)
		return row
	case res.err != nil:
		row.Fail(res.err)
		return row
	}
	st := compute(res.streams, r.cfg.Warmup, res.inject, res.prefillTTFT)
	if res.arm == ArmBaseline {
		// No prefill: the row's time is not a TTFT.
		row.Status = results.StatusOK
	} else {
		row.SetTime(res.prefillTTFT)
		row.Set(results.ColPrefillTTFT, res.prefillTTFT)
	}
	row.Set("token_counting", res.counting)
	if !math.IsNaN(res.simLag) {
		row.Set(results.ColSimLag, res.simLag)
	}
	var notes []string
	r.setFigures(&row, st, base, res.prefillTTFT, &notes)
	if res.arm == ArmBaseline {
		notes = append(notes, "window "+units.FormatSeconds(res.prefillTTFT)+" from the interfere arm's prefill TTFT")
	}
	if res.counting == serving.CountChunks {
		notes = append(notes, "tokens counted by chunks: the server reports neither continuous usage nor token ids, so chunks that bundle tokens undercount")
	}
	if res.promptNote != "" {
		notes = append(notes, res.promptNote)
	}
	if res.note != "" {
		notes = append(notes, res.note)
	}
	row.Reason = strings.Join(notes, "; ")
	return row
}

// setFigures writes the token counts, the two base TPOTs and the penalty
// and benefit on the protocol's base (the baseline arm's), or on the
// arm's own pre-injection base when there is no baseline arm; the
// penalty_base column says which.
func (r *Runner) setFigures(row *results.Row, st stats, base, window float64, notes *[]string) {
	if st.tokensDuring == 0 && window > 0 {
		// Fully stalled: each stream's next token is at least the window
		// away, so the effective TPOT is at least the window.
		st.effTPOT = window
		row.Set(ColPenaltyBound, BoundLower)
		*notes = append(*notes, "no decode token arrived during the window (the decodes stalled for the whole prefill): effective TPOT and penalty are lower bounds, prefill TTFT ÷ base TPOT")
	}
	row.Set("tokens_during", int(st.tokensDuring))
	row.Set(results.ColTokensPerStreamDuring, st.perStream)
	row.Set(results.ColEffTPOT, st.effTPOT)
	row.Set("itl_p50_during_s", st.itlP50During)
	row.Set("itl_p90_during_s", st.itlP90During)
	row.Set("itl_p50_base_s", st.itlP50)
	row.Set("itl_p90_base_s", st.itlP90)
	row.Set("base_tpot_preinject_s", st.baseTPOT)
	row.Set("penalty_vs_preinject", st.effTPOT/st.baseTPOT)
	row.Set("base_tpot_baseline_s", base)
	row.Set("penalty_vs_baseline", st.effTPOT/base)
	used, which := base, "baseline"
	if math.IsNaN(base) {
		used, which = st.baseTPOT, "preinject"
		*notes = append(*notes, "no baseline arm in this cell: penalty on the pre-injection base TPOT")
	}
	row.Set("penalty_base", which)
	row.Set(results.ColBaseTPOT, used)
	row.Set(results.ColPenalty, st.effTPOT/used)
	row.Set("benefit_s", window-st.perStream*used)
	if math.IsNaN(st.baseTPOT) {
		*notes = append(*notes, "too few tokens before the injection for a base TPOT: raise --inject-after")
	}
}

func (r *Runner) api() string {
	if r.cfg.API == "" {
		return serving.APICompletions
	}
	return r.cfg.API
}

// tokenRows returns one mb1_tokens.csv row per token of the arm; tokens
// a chunk carried together share its time.
func (res armResult) tokenRows(endpoint string) []results.Row {
	var out []results.Row
	for s, chunks := range res.streams {
		i := 0
		for _, c := range chunks {
			for range c.n {
				row := results.Row{Suite: "mb1", Rep: res.rep, Status: results.StatusOK}
				row.Set(results.ColEndpoint, endpoint)
				row.Set(results.ColArm, res.arm)
				row.Set(results.ColDecodeStreams, res.d)
				row.Set(results.ColPrefillTokens, res.p)
				row.Set(results.ColStream, s)
				row.Set(results.ColIndex, i)
				row.Set(results.ColTime, c.t)
				row.Set(results.ColInject, res.inject)
				row.Set(results.ColPrefillDone, res.done)
				out = append(out, row)
				i++
			}
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
		ms := func(col string) string { return units.FormatSeconds(row.Float(col)) }
		what = "base TPOT " + ms("base_tpot_s") + " (" + row.Get("penalty_base") + ")"
		if row.Get(results.ColPrefillTTFT) != "" {
			what += ", prefill TTFT " + ms("prefill_ttft_s")
		}
		what += fmt.Sprintf(", tokens/stream during %.3g, eff. TPOT %s, penalty %.3g",
			row.Float(results.ColTokensPerStreamDuring), ms("eff_tpot_s"), row.Float(results.ColPenalty))
	}
	if row.Reason != "" {
		what += " (" + row.Reason + ")"
	}
	harness.Note(r.cfg.Log, fmt.Sprintf("mb1 %-9s D=%s P=%s rep %d: %s", row.Get(results.ColArm), row.Get(results.ColDecodeStreams), row.Get(results.ColPrefillTokens), row.Rep, what))
}
