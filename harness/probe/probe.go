// Package probe measures, against a running vLLM (or any OpenAI-compatible)
// server, the time to first token of a prompt whose prefix the server
// holds in each tier: nowhere (miss: recompute), in its GPU prefix cache,
// in CPU memory after GPU eviction (a KV offload connector), or on a
// second instance it pulls from over a KV connector (remote). Prompts are
// lists of token ids of an exact length; each tier is forced by the
// requests sent before the measured one, and every row is checked against
// the server's own /metrics counters, never assumed.
//
// Timing follows vllm bench serve: one monotonic clock started just
// before the POST, TTFT at the first SSE chunk carrying a choice.
package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/internal/wait"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/units"
)

// The probe's tiers, by the probe's names of them (tierspec.Desc.Probe):
// a miss recomputes the prefix, a gpu hit is vLLM's prefix cache, a cpu
// hit its CPU offload, a remote hit a KV connector's pull from a peer.
var (
	tierMiss   = tierspec.Recompute.Probe
	tierGPU    = tierspec.HBM.Probe
	tierCPU    = tierspec.Host.Probe
	tierRemote = tierspec.Remote.Probe
)

// Tiers lists the tiers the probe knows, in the order it measures them.
var Tiers = []string{tierMiss, tierGPU, tierCPU, tierRemote}

// Connectors lists the KV connectors the remote tier can drive.
var Connectors = []string{"nixl", "mooncake"}

// settle is how long the probe waits before reading /metrics again when
// the first reading after a request does not confirm its tier.
const settle = 100 * time.Millisecond

// Bounds of a probe's configuration.
const (
	// maxEvictMargin bounds --evict-margin.
	maxEvictMargin = 1000
)

// MaxTokens is the max_tokens of every measured request: TTFT needs one
// token, E2E, TPOT and usage need the stream to go on a little.
const MaxTokens = 2

// A Config says what to probe.
type Config struct {
	// Weights are the estimated seconds of each configuration (prefix,
	// then tier), for the progress's ETA; nil weighs them alike.
	Weights []float64

	Endpoint      string // the server measured (the consumer for remote)
	Producer      string // remote tier: the instance that prefills
	Connector     string // nixl | mooncake
	BootstrapPort int    // mooncake: the producer's bootstrap port (8998)
	MooncakeShape string // mooncake: auto | bootstrap | engine | transfer
	API           string // completions (default) | chat
	Model         string // "" = first of /v1/models
	Tiers         []string
	Prefixes      []int // prompt lengths in tokens
	Reps          int
	Seed          uint64
	// Nonce makes this run's prompts differ from every earlier run's with
	// the same seed (a server keeps its cache between runs); 0 picks one
	// from the clock.
	Nonce        uint64
	EvictMargin  float64 // cpu: filler tokens = GPU pool × margin
	BlockSize    int     // 0 = from vllm:cache_config_info
	CPUCapacity  int     // cpu: tokens the CPU offload store holds; 0 = discover
	OffloadBlock int     // cpu: tokens per offload unit; 0 = discover, else the block
	Timeout      time.Duration
	// Idle fails a request whose server sends nothing for that long
	// (Client.Idle); 0 none.
	Idle time.Duration
	// MaxTimeouts stops the probe after that many consecutive requests
	// timed out (serving.Client.SetMaxTimeouts); 0 never.
	MaxTimeouts int
	Simulated   bool         // the server is a kvtier sim
	HTTP        *http.Client // nil: a client of its own
	// BlockBytes returns the KV bytes of one block of the served model,
	// 0 when its geometry is unknown. nil means unknown.
	BlockBytes func(model string, blockSize int) int64
	// ServerLog is the server's log (--server-log), whose cache lines
	// count a request's cached tokens where its response does not; nil
	// none.
	ServerLog *serving.ServerLog
	Log       io.Writer // progress, one line per row; nil for none
}

// Validate reports every problem with c at once, each naming its field
// (option.Error).
func (c Config) Validate() error {
	var errs []error
	if c.Endpoint == "" && !c.Simulated {
		errs = append(errs, option.Errorf("base-url", "required"))
	}
	for _, t := range c.Tiers {
		if !slices.Contains(Tiers, t) {
			errs = append(errs, option.Errorf("tiers", "unknown tier %q (known: %s)", t, strings.Join(Tiers, ", ")))
		}
	}
	if len(c.Tiers) == 0 {
		errs = append(errs, option.Errorf("tiers", "empty"))
	}
	errs = append(errs, serving.CheckCounts("prefix", c.Prefixes, 2, serving.MaxPromptTokens, "tokens")...)
	errs = append(errs, option.Range("reps", c.Reps, 1, serving.MaxReps),
		option.Range("evict-margin", c.EvictMargin, 1, maxEvictMargin),
		option.Range("block-size", c.BlockSize, 0, kv.MaxBlockTokens, "0: unknown"),
		option.Range("cpu-capacity", c.CPUCapacity, 0, 1<<30, "0: unknown"),
		option.Range("offload-block", c.OffloadBlock, 0, serving.MaxPromptTokens, "0: unknown"),
		option.Range("bootstrap-port", c.BootstrapPort, 0, 65535, "0: 8998, Mooncake's default"),
		option.Range("max-timeouts", c.MaxTimeouts, 0, serving.MaxReps, "0: never"))
	errs = append(errs, serving.CheckTimeouts(c.Timeout, c.Idle)...)
	if c.Connector != "" && !slices.Contains(Connectors, c.Connector) {
		errs = append(errs, option.Errorf("connector", "%q: want %s", c.Connector, strings.Join(Connectors, " or ")))
	}
	if !validShape(c.MooncakeShape) {
		errs = append(errs, option.Errorf("mooncake-shape", "%q: want %s", c.MooncakeShape, strings.Join(MooncakeShapes, ", ")))
	}
	errs = append(errs, serving.CheckAPI(c.API))
	return errors.Join(errs...)
}

// Info is what the probe learnt about the server before measuring.
type Info struct {
	Model        string
	MaxModelLen  int    // 0 unknown
	BlockSize    int    // used for blocks and verification
	BlockSource  string // "--block-size", "vllm:cache_config_info", "assumed (vLLM default)"
	GPUBlocks    int    // 0 unknown
	CacheConfig  map[string]string
	MetricsError string // why /metrics could not be read at the start
	Simulated    bool
	Version      string // GET /version; "" unknown
	VersionError string // why /version could not be read (vLLM and unknown families only)
	Family       serving.Family
	Generation   Generation
	Offload      Offload // cpu tier: the CPU store
	// MooncakeShape and MooncakeSource: the remote tier's request shape
	// with the Mooncake connector and how it was chosen.
	MooncakeShape, MooncakeSource string

	mooncake mooncake
}

// A Prober runs the probe against one server.
type Prober struct {
	cfg      Config
	c        *serving.Client
	producer *serving.Client
	prompts  *serving.Prompter
	info     Info
	// skipsSaid holds the tier and reason of each skip the console was
	// told of: one line per reason, not one per row (probe.csv has them all).
	skipsMu   sync.Mutex
	skipsSaid map[[2]string]bool
}

// New connects to the server: it lists the models (an error wrapping
// ErrUnreachable if that fails), picks the model, reads /version and
// /metrics (the cache configuration and which counters it has), and for
// the tiers asked for finds the CPU store's size and the Mooncake shape.
func New(ctx context.Context, cfg Config) (*Prober, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Prober{cfg: cfg}
	var err error
	if p.c, err = p.client(cfg.Endpoint); err != nil {
		return nil, err
	}
	if cfg.Producer != "" {
		if p.producer, err = p.client(cfg.Producer); err != nil {
			return nil, fmt.Errorf("--producer: %w", err)
		}
	}
	m, err := p.c.ServedModel(ctx, cfg.Model)
	if err != nil {
		return nil, err
	}
	p.info.Simulated = cfg.Simulated || p.c.Simulated()
	p.info.Model, p.info.MaxModelLen = m.ID, serverCount(float64(m.MaxModelLen))
	nonce := cfg.Nonce
	if nonce == 0 {
		nonce = uint64(time.Now().UnixNano()) // a nonce for unique prompts, not a duration
	}
	p.prompts = &serving.Prompter{Seed: cfg.Seed, Nonce: nonce, API: cfg.API, Client: p.c, Model: m.ID}
	p.learn(ctx)
	return p, nil
}

func (p *Prober) client(endpoint string) (*serving.Client, error) {
	return serving.NewMeasuringClient(endpoint, p.cfg.Timeout, p.cfg.Idle, p.cfg.HTTP, p.cfg.MaxTimeouts)
}

// learn reads what the server says of itself: version, counters, cache
// configuration, CPU store, Mooncake bootstrap server.
func (p *Prober) learn(ctx context.Context) {
	p.info.Family = p.c.DetectFamily(ctx)
	if p.cfg.ServerLog != nil && p.info.Family.Traits().CacheLog != "" {
		p.cfg.ServerLog.Expect()
	}
	if v, err := p.c.Version(ctx); err == nil {
		p.info.Version = v
	} else if p.info.Family.VLLMLike() {
		p.info.VersionError = err.Error() // another family's version says nothing of vLLM's counters
	} else {
		p.info.Version = p.info.Family.Version
	}
	snap, err := p.c.Metrics(ctx, p.info.Model)
	p.info.Generation = GenerationOf(p.info.Version, snap)
	if err != nil {
		p.info.MetricsError = serving.OneLine(err.Error())
		p.info.Generation.External = ExtNoMetrics
	}
	p.info.CacheConfig = snap.CacheConfig
	p.info.GPUBlocks = snap.GPUBlocks()
	p.info.BlockSize, p.info.BlockSource = snap.BlockSizeFor(p.cfg.BlockSize, p.info.Family)
	if slices.Contains(p.cfg.Tiers, tierCPU) {
		p.info.Offload = p.discoverOffload(ctx, snap)
	}
	if slices.Contains(p.cfg.Tiers, tierRemote) && p.producer != nil && p.connector() == "mooncake" {
		p.info.mooncake = p.discoverMooncake(ctx)
		p.info.MooncakeShape, p.info.MooncakeSource = p.info.mooncake.shape, p.info.mooncake.source
	}
}

// Info returns what New learnt about the server.
func (p *Prober) Info() Info { return p.info }

// Client returns the client of the measured server.
func (p *Prober) Client() *serving.Client { return p.c }

// Run measures every tier, prefix and rep, writing one row per measured
// request to sink as it goes. A request that fails is an error row and
// the sweep goes on; a tier that cannot be forced here is a skipped row.
// Run returns early, keeping what it wrote, when ctx is cancelled, and
// returns the sink's error if a row cannot be written.
func (p *Prober) Run(ctx context.Context, sink results.Sink) error {
	rs := harness.Requests{Suite: "probe", Sink: sink, Log: p.cfg.Log, Policy: harness.Policy{Reps: p.cfg.Reps}}
	harness.ProgressOf(p.cfg.Log).PlanEstimated(len(p.cfg.Prefixes)*len(p.cfg.Tiers), p.cfg.Weights)
	for _, l := range p.cfg.Prefixes {
		for _, tier := range p.cfg.Tiers {
			if _, err := rs.Measure(ctx, p.requestCase(tier, l)); err != nil {
				return err
			}
		}
	}
	return p.c.Tripped()
}

// requestCase is the probe of one tier at l tokens as the harness's
// request loop runs it: a hung server (the client's breaker tripped)
// gets no more requests, its reps are skipped rows.
func (p *Prober) requestCase(tier string, l int) harness.RequestCase {
	return harness.RequestCase{
		Label: fmt.Sprintf("%s %d tokens", tier, l),
		Do: func(ctx context.Context, rep int) results.Row {
			row := p.measure(ctx, tier, l, rep)
			if row.Status == results.StatusError && serving.TrippedReason(row.Reason) {
				row.Skip(row.Reason)
			}
			return row
		},
		Skip: func(rep int, reason string) results.Row {
			row := p.newRow(tier, l, rep)
			row.Skip(reason)
			return row
		},
		Stop: p.c.Tripped,
		Log:  p.logRow,
	}
}

func (p *Prober) logRow(r results.Row) {
	if p.cfg.Log == nil {
		return
	}
	what := ""
	switch r.Status {
	case results.StatusOK:
		what = "ttft " + units.FormatSeconds(r.Seconds)
		if r.Get(results.ColVerified) == "true" {
			what += " verified by " + r.Get("verified_by")
		} else {
			what += " NOT verified: " + r.Get(results.ColVerifyReason)
		}
	case results.StatusSkipped:
		if p.skipSaid(r.Tier, r.Reason) {
			return
		}
		what = "skipped: " + r.Reason + " (not repeated for the other rows it skips: probe.csv has them)"
	default:
		what = string(r.Status) + ": " + r.Reason
	}
	harness.Note(p.cfg.Log, fmt.Sprintf("probe %-6s %6d tokens rep %d: %s", r.Tier, r.PrefixTokens, r.Rep, what))
}

// skipSaid reports whether the console was told of a skip of tier for
// reason already, and notes that it now is.
func (p *Prober) skipSaid(tier, reason string) bool {
	p.skipsMu.Lock()
	defer p.skipsMu.Unlock()
	k := [2]string{tier, reason}
	if p.skipsSaid[k] {
		return true
	}
	if p.skipsSaid == nil {
		p.skipsSaid = map[[2]string]bool{}
	}
	p.skipsSaid[k] = true
	return false
}

// newRow fills the columns every row of this probe has.
func (p *Prober) newRow(tier string, l, rep int) results.Row {
	r := results.NewRow("probe")
	r.Backend, r.Transport = "http", "http"
	r.Tier, r.Model = tier, p.info.Model
	r.PrefixTokens, r.Rep = int64(l), rep
	bs := p.info.BlockSize
	r.Blocks = int64((l + bs - 1) / bs)
	if p.cfg.BlockBytes != nil {
		if b := p.cfg.BlockBytes(p.info.Model, bs); b > 0 {
			r.Bytes = r.Blocks * b
		}
	}
	r.Set(results.ColEndpoint, redact.URL(p.cfg.Endpoint))
	r.Set("server_family", p.info.Family.Name)
	if tier == tierRemote {
		r.Set("producer", redact.URL(p.cfg.Producer))
		r.Set("connector", p.connector())
	}
	r.Set(results.ColSimulated, p.info.Simulated)
	r.Set("request_id", p.requestID(tier, l, rep))
	r.Set("api", p.api())
	r.Set("server_version", p.info.Version)
	r.Set("counter_generation", p.info.Generation.String())
	return r
}

func (p *Prober) api() string {
	if p.cfg.API == "" {
		return serving.APICompletions
	}
	return p.cfg.API
}

func (p *Prober) requestID(tier string, l, rep int) string {
	return fmt.Sprintf("kvtier-%d-%s-%d-%d", p.cfg.Seed, tier, l, rep)
}

// measure forces one tier for a prompt of l tokens and measures it.
func (p *Prober) measure(ctx context.Context, tier string, l, rep int) results.Row {
	row := p.newRow(tier, l, rep)
	id := p.requestID(tier, l, rep)
	if p.info.MaxModelLen > 0 && l+MaxTokens > p.info.MaxModelLen {
		row.Skip(fmt.Sprintf("prefix of %d tokens exceeds the server's max_model_len %d", l, p.info.MaxModelLen))
		return row
	}
	if tier == tierRemote && p.producer == nil {
		row.Skip("remote tier needs --producer")
		return row
	}
	pr, err := p.prompts.Make(ctx, id, l, true)
	if err != nil {
		row.Fail(err)
		return row
	}
	if pr.Note != "" {
		row.Reason = "note: " + pr.Note
	}
	req := p.prompts.Request(pr, MaxTokens, id)
	if err := p.force(ctx, &row, tier, id, pr, req); err != nil {
		row.Fail(err)
		return row
	}
	if row.Status == results.StatusSkipped {
		return row
	}
	if tier == tierRemote {
		p.measureRemote(ctx, &row, req)
		return row
	}
	p.measured(ctx, &row, p.c, req)
	return row
}

// force sends what must come before the measured request for tier to
// serve it: nothing (miss, remote), a warm-up (gpu), a warm-up and an
// eviction flood (cpu). A cpu row that cannot be forced here is skipped.
func (p *Prober) force(ctx context.Context, row *results.Row, tier, id string, pr serving.Prompt, req serving.Request) error {
	switch tier {
	case tierGPU:
		return p.warm(ctx, req)
	case tierCPU:
		row.Set("grain_tokens", p.info.Offload.Grain)
		if p.info.Offload.Tokens > 0 {
			row.Set("cpu_capacity_tokens", p.info.Offload.Tokens)
		}
		if why := p.info.Family.Traits().NoOffload; why != "" {
			row.Skip("no cpu tier to measure: " + why)
			return nil
		}
		if p.info.GPUBlocks <= 0 {
			why := "vllm:cache_config_info missing (no num_gpu_blocks)"
			if !p.info.Family.VLLMLike() {
				why = p.info.Family.Traits().Title + " reports no size of its KV pool"
			}
			row.Skip("cannot size eviction: " + why)
			return nil
		}
		need, err := p.floodTokens(pr.Tokens)
		if err != nil {
			row.Skip(err.Error())
			return nil
		}
		row.Set("evict_tokens", need)
		if err := p.warm(ctx, req); err != nil {
			return err
		}
		w := harness.ProgressOf(p.cfg.Log)
		w.Wait(fmt.Sprintf("the GPU cache flood (%d filler tokens evicting the prefix)", need))
		defer w.Wait("")
		return p.evict(ctx, id, need)
	}
	return nil
}

// warm sends the prompt once so the server caches its prefix.
func (p *Prober) warm(ctx context.Context, req serving.Request) error {
	req.MaxTokens = 1
	req.RequestID += "-warm"
	if _, err := p.c.Complete(ctx, req); err != nil {
		return fmt.Errorf("warm-up request: %w", err)
	}
	return nil
}

// evict sends unique filler prompts totalling need tokens, four at a
// time, so that the GPU prefix cache drops the warmed prompt.
func (p *Prober) evict(ctx context.Context, id string, need int) error {
	// Each filler fits the model's context and half the GPU pool, so the
	// server can take it while other requests hold blocks; the last one
	// takes what is left, so the flood is need tokens exactly.
	size := min(8192, p.info.GPUBlocks/2*p.info.BlockSize)
	if p.info.MaxModelLen > 0 {
		size = min(size, p.info.MaxModelLen-2)
	}
	size = max(size, p.info.BlockSize)
	n := (need + size - 1) / size
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, 4)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fid := fmt.Sprintf("%s-fill-%d", id, i)
			pr, err := p.prompts.Make(ctx, fid, min(size, need-i*size), false)
			if err == nil {
				_, err = p.c.Complete(ctx, p.prompts.Request(pr, 1, fid))
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("eviction filler %d of %d: %w", i+1, n, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// measured sends the measured request with /metrics read just before and
// just after it, and fills row with the times, the usage and the
// verification.
func (p *Prober) measured(ctx context.Context, row *results.Row, c *serving.Client, req serving.Request) {
	before, berr := c.Metrics(ctx, p.info.Model)
	if ie := (*serving.IdleError)(nil); errors.As(berr, &ie) {
		row.Fail(berr) // the server is silent: no request to time
		return
	}
	if p.cfg.ServerLog != nil {
		p.cfg.ServerLog.Mark()
	}
	s, err := c.Stream(ctx, req, nil)
	aft, aerr := c.Metrics(ctx, p.info.Model)
	var he *serving.HTTPError
	switch {
	case errors.As(err, &he):
		row.Set("http_status", he.Status)
	case s.Events > 0 || err == nil:
		row.Set("http_status", 200)
	}
	row.Set("prompt_form", s.Form)
	if err != nil {
		row.Fail(err)
		return
	}
	p.timings(row, &s, req.Chat())
	if err := s.PromptCheck(); err != nil {
		row.Fail(err) // the usage columns stay: they show the cut
		return
	}
	merr := berr // the reading before; else the one after (both failing say the same)
	if merr == nil {
		merr = aerr
	}
	p.verify(ctx, row, c, req, &s, before, aft, merr)
}

// verify decides whether the measured request was served from its tier
// (Verify) from the counters read before and after it (merr: why they
// could not be), what its response or the server's log counted cached,
// and a second reading of the counters when the first disagrees.
func (p *Prober) verify(ctx context.Context, row *results.Row, c *serving.Client, req serving.Request, s *serving.Stream, before, aft serving.Snapshot, merr error) {
	var d serving.Delta
	if merr == nil {
		d = serving.Sub(before, aft)
	}
	check := p.check(row.Tier, req, s.Usage)
	report := p.cacheReport(row, s, check.L)
	if merr != nil {
		merr = p.noCounters(merr, report)
	}
	v := Verify(check, d, merr, report)
	if !v.OK && merr == nil {
		// A server may publish its counters a moment after the stream
		// ends: read them once more before concluding.
		if wait.For(ctx, settle) == nil {
			if aft2, err := c.Metrics(ctx, p.info.Model); err == nil {
				d = serving.Sub(before, aft2)
				v = Verify(check, d, nil, report)
			}
		}
	}
	if why := s.Impossible(); why != "" {
		v = fail("", "the server reported an impossible figure (%s): the row verifies nothing", why)
	}
	if d.SimLagFound {
		row.Set(results.ColSimLag, d.SimLag)
		if ttft := s.TTFT.Seconds(); d.SimLag > analysis.MaxSimLag*ttft {
			v = fail("", "kvtier sim fell %s further behind real time during the row, more than %.0f %% of its TTFT (%s): the figure is this machine's load, not the model's",
				units.FormatSeconds(d.SimLag), 100*analysis.MaxSimLag, units.FormatSeconds(ttft))
		}
	}
	p.verdict(row, d, v, check)
}

// timings fills the row's times: TTFT, E2E, vllm bench's TPOT and ITL,
// and the usage counts.
func (p *Prober) timings(row *results.Row, s *serving.Stream, chat bool) {
	row.SetTime(s.TTFT.Seconds())
	// bytes is the prefix's KV footprint, but a TTFT is not a transfer of
	// it (a miss moves nothing, a hit also prefills the last block and
	// decodes a token): a bytes/TTFT rate would read as a bandwidth.
	row.GBps = math.NaN()
	if s.Note != "" {
		row.Reason = strings.TrimPrefix(row.Reason+"; note: "+s.Note, "; ")
	}
	row.Set(results.ColTTFT, s.TTFT.Seconds())
	row.Set("e2e_s", s.E2E.Seconds())
	if tpot, why := s.TPOT(chat); why == "" {
		row.Set("tpot_s", tpot.Seconds())
	}
	if itl := s.ITL(); len(itl) > 0 {
		var total time.Duration
		for _, g := range itl {
			total += g
		}
		row.Set("itl_mean_s", (total / time.Duration(len(itl))).Seconds())
	}
	if s.Usage != nil {
		row.Set("prompt_tokens", s.Usage.PromptTokens)
		row.Set("completion_tokens", s.Usage.CompletionTokens)
	}
	if n, src, ok := s.Cached(); ok {
		row.Set("cached_tokens", n)
		row.Set("cached_source", src)
	}
	if why := s.Impossible(); why != "" {
		row.Set(results.ColServerCheck, "impossible: "+why)
	}
}

// check is what the measured request must show: the prompt's length as
// the server counted it (usage) or as sent, and the unit a complete hit
// may fall short by.
func (p *Prober) check(tier string, req serving.Request, u *serving.Usage) Check {
	l := req.PromptTokens
	if l == 0 {
		l = len(req.Prompt)
	}
	if u != nil && u.PromptTokens > 0 {
		l = u.PromptTokens
	}
	grain := p.info.BlockSize
	if tier == tierCPU && p.info.Offload.Grain > grain {
		grain = p.info.Offload.Grain
	}
	return Check{Tier: tier, L: l, Grain: grain, Gen: p.info.Generation}
}

// verdict writes the verification and the counters it read into row.
func (p *Prober) verdict(row *results.Row, d serving.Delta, v Verdict, c Check) {
	if d.HitsFound {
		row.Set("hit_tokens", int64(d.Hits))
	}
	if d.ExtFound {
		row.Set("external_hit_tokens", int64(d.ExtHits))
	}
	switch {
	case d.CachedBySource != nil:
		row.Set("source_tokens", fmtSources(d.CachedBySource))
	case d.BySource != nil:
		row.Set("source_tokens", fmtSources(d.BySource))
	}
	if row.Get("grain_tokens") == "" {
		row.Set("grain_tokens", c.Grain)
	}
	row.Set(results.ColVerified, v.OK)
	row.Set("verified_by", v.By)
	if !v.OK {
		row.Set(results.ColVerifyReason, serving.OneLine(v.Reason))
	}
}

// Overhead measures the client's own floor: the TTFT p50 of reps fresh
// prompts of l tokens against a server that answers at no cost (an
// in-process kvtier sim with no delays).
func Overhead(ctx context.Context, c *serving.Client, model string, l, reps int, seed uint64) (time.Duration, error) {
	pr := &serving.Prompter{Seed: seed, Nonce: uint64(time.Now().UnixNano()), Model: model} // a nonce, not a duration
	var ts []time.Duration
	for i := range reps {
		prompt, _ := pr.Make(ctx, fmt.Sprintf("overhead-%d", i), l, true)
		s, err := c.Stream(ctx, pr.Request(prompt, MaxTokens, ""), nil)
		if err != nil {
			return 0, fmt.Errorf("client overhead: %w", err)
		}
		ts = append(ts, s.TTFT)
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}
