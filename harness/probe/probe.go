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
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvtier/kvtier/results"
)

// Tiers lists the tiers the probe knows, in the order it measures them.
var Tiers = []string{"miss", "gpu", "cpu", "remote"}

// Connectors lists the KV connectors the remote tier can drive.
var Connectors = []string{"nixl", "mooncake"}

// settle is how long the probe waits before reading /metrics again when
// the first reading after a request does not confirm its tier.
const settle = 100 * time.Millisecond

// MaxTokens is the max_tokens of every measured request: TTFT needs one
// token, E2E and usage need the stream to go on a little.
const MaxTokens = 2

// A Config says what to probe.
type Config struct {
	Endpoint      string // the server measured (the consumer for remote)
	Producer      string // remote tier: the instance that prefills
	Connector     string // nixl | mooncake
	BootstrapPort int    // mooncake: the producer's bootstrap port (8998)
	Model         string // "" = first of /v1/models
	Tiers         []string
	Prefixes      []int // prompt lengths in tokens
	Reps          int
	Seed          uint64
	// Nonce makes this run's prompts differ from every earlier run's with
	// the same seed (a server keeps its cache between runs); 0 picks one
	// from the clock.
	Nonce       uint64
	EvictMargin float64 // cpu: filler tokens = GPU pool × margin
	BlockSize   int     // 0 = from vllm:cache_config_info
	Timeout     time.Duration
	Simulated   bool // the server is a kvtier sim
	// BlockBytes returns the KV bytes of one block of the served model,
	// 0 when its geometry is unknown. nil means unknown.
	BlockBytes func(model string, blockSize int) int64
	Log        io.Writer // progress, one line per row; nil for none
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Endpoint == "" {
		errs = append(errs, errors.New("--endpoint is required (or --sim)"))
	}
	for _, t := range c.Tiers {
		if !slices.Contains(Tiers, t) {
			errs = append(errs, fmt.Errorf("unknown tier %q (known: %s)", t, strings.Join(Tiers, ", ")))
		}
	}
	if len(c.Tiers) == 0 {
		errs = append(errs, errors.New("--tiers is empty"))
	}
	if len(c.Prefixes) == 0 {
		errs = append(errs, errors.New("--prefix is empty"))
	}
	for _, l := range c.Prefixes {
		if l < 2 {
			errs = append(errs, fmt.Errorf("prefix of %d tokens is too short", l))
		}
	}
	if c.Reps < 1 {
		errs = append(errs, fmt.Errorf("--reps %d: must be at least 1", c.Reps))
	}
	if c.EvictMargin < 1 {
		errs = append(errs, fmt.Errorf("--evict-margin %g: must be at least 1", c.EvictMargin))
	}
	if c.BlockSize < 0 {
		errs = append(errs, fmt.Errorf("--block-size %d: must be positive", c.BlockSize))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s: must be positive", c.Timeout))
	}
	if c.Connector != "" && !slices.Contains(Connectors, c.Connector) {
		errs = append(errs, fmt.Errorf("unknown connector %q (known: %s)", c.Connector, strings.Join(Connectors, ", ")))
	}
	return errors.Join(errs...)
}

// ErrUnreachable wraps the error of a server that cannot be reached at
// the start; nothing was measured.
var ErrUnreachable = errors.New("endpoint unreachable")

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
}

// A Prober runs the probe against one server.
type Prober struct {
	cfg      Config
	c        *Client
	producer *Client
	info     Info
	nonce    uint64
}

// New connects to the server: it lists the models (an error wrapping
// ErrUnreachable if that fails), picks the model, and reads /metrics for
// the cache configuration.
func New(ctx context.Context, cfg Config) (*Prober, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := NewClient(cfg.Endpoint, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	p := &Prober{cfg: cfg, c: c, nonce: cfg.Nonce}
	if p.nonce == 0 {
		p.nonce = uint64(time.Now().UnixNano())
	}
	if cfg.Producer != "" {
		if p.producer, err = NewClient(cfg.Producer, cfg.Timeout); err != nil {
			return nil, fmt.Errorf("--producer: %w", err)
		}
	}
	models, err := c.Models(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreachable, cfg.Endpoint, err)
	}
	p.info.Simulated = cfg.Simulated || c.Simulated()
	m, ok := PickModel(models, cfg.Model)
	if !ok {
		return nil, fmt.Errorf("%s serves no model (GET /v1/models is empty)", cfg.Endpoint)
	}
	p.info.Model, p.info.MaxModelLen = m.ID, m.MaxModelLen
	if strings.Contains(strings.ToLower(m.OwnedBy), "kvtier") {
		p.info.Simulated = true
	}
	snap, err := c.Metrics(ctx, p.info.Model)
	if err != nil {
		p.info.MetricsError = err.Error()
	}
	p.info.CacheConfig = snap.CacheConfig
	p.info.GPUBlocks = snap.GPUBlocks()
	switch {
	case cfg.BlockSize > 0:
		p.info.BlockSize, p.info.BlockSource = cfg.BlockSize, "--block-size"
	case snap.BlockSize() > 0:
		p.info.BlockSize, p.info.BlockSource = snap.BlockSize(), "vllm:cache_config_info"
	default:
		p.info.BlockSize, p.info.BlockSource = 16, "assumed (vLLM default; vllm:cache_config_info missing)"
	}
	return p, nil
}

// Info returns what New learnt about the server.
func (p *Prober) Info() Info { return p.info }

// Client returns the client of the measured server.
func (p *Prober) Client() *Client { return p.c }

// Run measures every tier, prefix and rep, writing one row per measured
// request to sink as it goes. A request that fails is an error row and
// the sweep goes on; a tier that cannot be forced here is a skipped row.
// Run returns early, keeping what it wrote, when ctx is cancelled, and
// returns the sink's error if a row cannot be written.
func (p *Prober) Run(ctx context.Context, sink results.Sink) error {
	for _, l := range p.cfg.Prefixes {
		for _, tier := range p.cfg.Tiers {
			for rep := range p.cfg.Reps {
				if err := ctx.Err(); err != nil {
					return err
				}
				row := p.measure(ctx, tier, l, rep)
				if err := ctx.Err(); err != nil {
					return err // interrupted mid-request: not the server's failure
				}
				p.logRow(row)
				if err := sink.Write(row); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (p *Prober) logRow(r results.Row) {
	if p.cfg.Log == nil {
		return
	}
	what := ""
	switch r.Status {
	case results.StatusOK:
		what = fmt.Sprintf("ttft %.4f s", r.Seconds)
		if r.Get("verified") == "true" {
			what += " verified"
		} else {
			what += " NOT verified: " + r.Get("verify_reason")
		}
	default:
		what = string(r.Status) + ": " + r.Reason
	}
	fmt.Fprintf(p.cfg.Log, "probe %-6s %6d tokens rep %d: %s\n", r.Tier, r.PrefixTokens, r.Rep, what)
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
	r.Set("endpoint", p.cfg.Endpoint)
	if tier == "remote" {
		r.Set("producer", p.cfg.Producer)
		r.Set("connector", p.connector())
	}
	r.Set("simulated", p.info.Simulated)
	r.Set("request_id", p.requestID(tier, l, rep))
	return r
}

func (p *Prober) connector() string {
	if p.cfg.Connector == "" {
		return "nixl"
	}
	return p.cfg.Connector
}

func (p *Prober) requestID(tier string, l, rep int) string {
	return fmt.Sprintf("kvtier-%d-%s-%d-%d", p.cfg.Seed, tier, l, rep)
}

// prompt returns a prompt of exactly l token ids for the given purpose,
// seeded by the run's seed and the purpose; its first block carries the
// run's nonce so no earlier run can have cached it. Token ids stay in
// [100, 30000), valid in every common vocabulary.
func (p *Prober) prompt(purpose string, l int) ([]int, string) {
	h := PurposeHash(purpose)
	ids := TokenIDs(p.cfg.Seed, h, l)
	copy(ids, TokenIDs(p.nonce, h, min(l, 4)))
	salt := fmt.Sprintf("kvtier-%x-%x", p.nonce, h)
	return ids, salt
}

// PurposeHash is the 64-bit FNV-1a hash of a prompt's purpose ("warm",
// "evict-3", ...): the stream that, with a seed, makes its token ids.
func PurposeHash(purpose string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(purpose); i++ {
		h ^= uint64(purpose[i])
		h *= 1099511628211
	}
	return h
}

// TokenIDs returns n token ids drawn from a PCG seeded with (seed,
// stream), each in [100, 30000), valid in every common vocabulary. The
// same arguments give the same ids; a shorter n gives a prefix of them.
func TokenIDs(seed, stream uint64, n int) []int {
	rng := rand.New(rand.NewPCG(seed, stream))
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 100 + rng.IntN(29900)
	}
	return ids
}

// measure forces one tier for a prompt of l tokens and measures it.
func (p *Prober) measure(ctx context.Context, tier string, l, rep int) results.Row {
	row := p.newRow(tier, l, rep)
	id := p.requestID(tier, l, rep)
	ids, salt := p.prompt(id, l)
	req := Request{Model: p.info.Model, Prompt: ids, MaxTokens: MaxTokens, Salt: salt, RequestID: id}
	if p.info.MaxModelLen > 0 && l+MaxTokens > p.info.MaxModelLen {
		row.Skip(fmt.Sprintf("prefix of %d tokens exceeds the server's max_model_len %d", l, p.info.MaxModelLen))
		return row
	}
	switch tier {
	case "miss":
		// A fresh prompt and salt: nothing can be cached.
	case "gpu":
		if err := p.warm(ctx, req); err != nil {
			row.Fail(err)
			return row
		}
	case "cpu":
		need := p.evictTokens()
		if need == 0 {
			row.Skip("cannot size eviction: vllm:cache_config_info missing (no num_gpu_blocks)")
			return row
		}
		if err := p.warm(ctx, req); err != nil {
			row.Fail(err)
			return row
		}
		if err := p.evict(ctx, id, need); err != nil {
			row.Fail(err)
			return row
		}
	case "remote":
		if p.producer == nil {
			row.Skip("remote tier needs --producer")
			return row
		}
		return p.measureRemote(ctx, row, req)
	}
	p.measured(ctx, &row, p.c, req, nil)
	return row
}

// warm sends the prompt once so the server caches its prefix.
func (p *Prober) warm(ctx context.Context, req Request) error {
	req.MaxTokens = 1
	req.RequestID += "-warm"
	if _, err := p.c.Complete(ctx, req); err != nil {
		return fmt.Errorf("warm-up request: %w", err)
	}
	return nil
}

// evictTokens returns how many filler tokens push everything out of the
// GPU prefix cache: the GPU pool times the margin; 0 when the pool size
// is unknown.
func (p *Prober) evictTokens() int {
	if p.info.GPUBlocks <= 0 {
		return 0
	}
	return int(math.Ceil(float64(p.info.GPUBlocks*p.info.BlockSize) * p.cfg.EvictMargin))
}

// evict sends unique filler prompts totalling need tokens, four at a
// time, so that the GPU prefix cache drops the warmed prompt.
func (p *Prober) evict(ctx context.Context, id string, need int) error {
	// Each filler fits the model's context and half the GPU pool, so the
	// server can take it while other requests hold blocks.
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
			ids, salt := p.prompt(fid, size)
			_, err := p.c.Complete(ctx, Request{Model: p.info.Model, Prompt: ids, MaxTokens: 1, Salt: salt, RequestID: fid})
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

// measureRemote has the producer prefill the prompt, then measures the
// consumer (the endpoint) pulling it.
func (p *Prober) measureRemote(ctx context.Context, row results.Row, req Request) results.Row {
	preq := req
	preq.MaxTokens = 1
	preq.KVParams = map[string]any{
		"do_remote_decode": true, "do_remote_prefill": false,
		"remote_engine_id": nil, "remote_block_ids": nil,
		"remote_host": nil, "remote_port": nil,
	}
	switch p.connector() {
	case "mooncake":
		// The producer's request is fired and not waited for; the consumer
		// learns where to pull from through the bootstrap server.
		u, _ := url.Parse(p.producer.Base)
		host := u.Hostname()
		port := p.cfg.BootstrapPort
		if port == 0 {
			port = 8998
		}
		done := make(chan error, 1)
		go func() {
			_, err := p.producer.Complete(ctx, preq)
			done <- err
		}()
		req.KVParams = map[string]any{
			"do_remote_decode": false, "do_remote_prefill": true,
			"bootstrap_server_host": host, "bootstrap_server_port": port,
			"remote_bootstrap_addr": net.JoinHostPort(host, strconv.Itoa(port)),
		}
		p.measured(ctx, &row, p.c, req, func() error {
			if err := <-done; err != nil {
				return fmt.Errorf("producer %s: %w", p.cfg.Producer, err)
			}
			return nil
		})
	default:
		resp, err := p.producer.Complete(ctx, preq)
		if err != nil {
			row.Fail(fmt.Errorf("producer %s: %w", p.cfg.Producer, err))
			return row
		}
		if len(resp.KVParams) == 0 {
			row.Fail(fmt.Errorf("producer %s returned no kv_transfer_params (is it a kv_producer, and did it stop on max_tokens?)", p.cfg.Producer))
			return row
		}
		req.KVParams = resp.KVParams
		p.measured(ctx, &row, p.c, req, nil)
	}
	return row
}

// measured sends the measured request with /metrics read just before and
// just after it, and fills row with the times, the usage and the
// verification. after, if not nil, runs when the stream has ended; its
// error fails the row.
func (p *Prober) measured(ctx context.Context, row *results.Row, c *Client, req Request, after func() error) {
	before, berr := c.Metrics(ctx, p.info.Model)
	s, err := c.Stream(ctx, req, nil)
	aft, aerr := c.Metrics(ctx, p.info.Model)
	if after != nil {
		if perr := after(); perr != nil && err == nil {
			err = perr
		}
	}
	var he *HTTPError
	switch {
	case errors.As(err, &he):
		row.Set("http_status", he.Status)
	case s.Events > 0 || err == nil:
		row.Set("http_status", 200)
	}
	if err != nil {
		row.Fail(err)
		return
	}
	row.SetTime(s.TTFT.Seconds())
	// bytes is the prefix's KV footprint, but a TTFT is not a transfer of
	// it (a miss moves nothing, a hit also prefills the last block and
	// decodes a token): a bytes/TTFT rate would read as a bandwidth.
	row.GBps = math.NaN()
	if s.Note != "" {
		row.Reason = "note: " + s.Note
	}
	row.Set("ttft_s", s.TTFT.Seconds())
	row.Set("e2e_s", s.E2E.Seconds())
	if s.Usage != nil {
		row.Set("prompt_tokens", s.Usage.PromptTokens)
		row.Set("completion_tokens", s.Usage.CompletionTokens)
		if n, ok := s.Usage.CachedTokens(); ok {
			row.Set("cached_tokens", n)
		}
	}
	var d Delta
	var merr error
	switch {
	case berr != nil:
		merr = berr
	case aerr != nil:
		merr = aerr
	default:
		d = Sub(before, aft)
	}
	ok, why := Verify(row.Tier, len(req.Prompt), p.info.BlockSize, d, merr, s.Usage)
	if !ok && merr == nil {
		// A server may publish its counters a moment after the stream
		// ends: read them once more before concluding.
		select {
		case <-ctx.Done():
		case <-time.After(settle):
			if aft2, err := c.Metrics(ctx, p.info.Model); err == nil {
				d = Sub(before, aft2)
				ok, why = Verify(row.Tier, len(req.Prompt), p.info.BlockSize, d, nil, s.Usage)
			}
		}
	}
	if d.HitsFound {
		row.Set("hit_tokens", int64(d.Hits))
	}
	if d.ExtFound {
		row.Set("external_hit_tokens", int64(d.ExtHits))
	}
	row.Set("verified", ok)
	if !ok {
		row.Set("verify_reason", why)
	}
}

// Verify decides from the counters' movement over one request of l
// tokens whether it was served from the given tier, and why not:
//
//   - miss: fewer than one block came from any cache;
//   - gpu: prefix_cache_hits rose by at least l - blockSize (vLLM always
//     recomputes the last block's worth at most);
//   - cpu, remote: external_prefix_cache_hits rose by that much.
//
// Counters that rose by more than one request can account for mean other
// traffic ran meanwhile: the row is then not verified, whatever the
// deltas say. Without counters, gpu and miss fall back to usage's
// cached_tokens; cpu and remote cannot (cached_tokens does not say where
// the tokens came from).
func Verify(tier string, l, blockSize int, d Delta, metricsErr error, u *Usage) (bool, string) {
	need := float64(l - blockSize)
	cached, hasCached := u.CachedTokens()
	if metricsErr != nil {
		d = Delta{}
	}
	noCounters := func(what string) string {
		if metricsErr != nil {
			return fmt.Sprintf("cannot verify: %v", metricsErr)
		}
		return fmt.Sprintf("cannot verify: /metrics has no %s", what)
	}
	if metricsErr == nil && (d.Queries > float64(l) || d.Hits > float64(l) || d.ExtHits > float64(l) || d.ExtQueries > float64(l)) {
		return false, fmt.Sprintf("concurrent traffic: counters rose by more than one request of %d tokens explains (queries +%g, hits +%g, external hits +%g); deltas are ambiguous", l, d.Queries, d.Hits, d.ExtHits)
	}
	switch tier {
	case "miss":
		if d.HitsFound {
			if got := d.Hits + d.ExtHits; got >= float64(blockSize) {
				return false, fmt.Sprintf("prefix_cache_hits rose by %g (external %g) of %d: the prompt was already cached", d.Hits, d.ExtHits, l)
			}
			return true, ""
		}
		if hasCached {
			if cached >= blockSize {
				return false, fmt.Sprintf("usage reports %d cached tokens of %d: the prompt was already cached", cached, l)
			}
			return true, ""
		}
		return false, noCounters("vllm:prefix_cache_hits and usage has no cached_tokens")
	case "gpu":
		if d.HitsFound {
			if d.Hits >= need {
				return true, ""
			}
			return false, fmt.Sprintf("prefix_cache_hits rose by %g of %d: the warmed prefix was not served from the GPU prefix cache (prefix caching off?)", d.Hits, l)
		}
		if hasCached {
			if float64(cached) >= need {
				return true, ""
			}
			return false, fmt.Sprintf("usage reports %d cached tokens of %d: the warmed prefix was not served from cache", cached, l)
		}
		return false, noCounters("vllm:prefix_cache_hits and usage has no cached_tokens")
	case "cpu", "remote":
		if !d.ExtFound {
			return false, noCounters("vllm:external_prefix_cache_hits: a GPU hit cannot be told from a " + tier + " hit")
		}
		if d.ExtHits >= need {
			return true, ""
		}
		if tier == "cpu" {
			if d.HitsFound && d.Hits >= need {
				return false, fmt.Sprintf("prefix_cache_hits rose by %g of %d and external_prefix_cache_hits by %g: the prefix was still in GPU memory (eviction too small? raise --evict-margin)", d.Hits, l, d.ExtHits)
			}
			return false, fmt.Sprintf("external_prefix_cache_hits rose by %g of %d: the server has no CPU offload?", d.ExtHits, l)
		}
		return false, fmt.Sprintf("external_prefix_cache_hits rose by %g of %d: the consumer did not pull the prefix from the producer (no KV connector?)", d.ExtHits, l)
	}
	return false, fmt.Sprintf("unknown tier %q", tier)
}

// Overhead measures the client's own floor: the TTFT p50 of reps fresh
// prompts of l tokens against a server that answers at no cost (an
// in-process kvtier sim with no delays).
func Overhead(ctx context.Context, c *Client, model string, l, reps int, seed uint64) (time.Duration, error) {
	p := &Prober{cfg: Config{Seed: seed}, c: c, nonce: uint64(time.Now().UnixNano())}
	var ts []time.Duration
	for i := range reps {
		ids, salt := p.prompt(fmt.Sprintf("overhead-%d", i), l)
		s, err := c.Stream(ctx, Request{Model: model, Prompt: ids, MaxTokens: MaxTokens, Salt: salt}, nil)
		if err != nil {
			return 0, fmt.Errorf("client overhead: %w", err)
		}
		ts = append(ts, s.TTFT)
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}
