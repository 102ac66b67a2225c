// Package vllmsim is a simulated vLLM server: the OpenAI-compatible HTTP API
// (completions and chat, streaming as vLLM streams), vLLM's Prometheus
// metrics, and behind them a model of the V1 engine — paged KV blocks with
// prefix caching and LRU eviction, an optional CPU offload store, a
// continuous-batching scheduler with chunked prefill, and disaggregated
// prefill between a producer and a consumer. A cost model calibrated to
// reference measurements (profile "h20") says how long each engine step,
// load and transfer takes; the server sleeps that time, scaled.
//
// It exists so that kvtier's HTTP probes can be developed and tested
// without a GPU, and so that a dry run of a probe shows what a real server
// would be asked. Every response carries "X-Kvtier-Simulated: 1" and
// /metrics has kvtier_simulated 1, so a simulated figure is never taken
// for a measured one.
package vllmsim

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvtier/kvtier/internal/wait"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
)

// A Config describes one simulated server. Zero fields take the defaults
// noted.
type Config struct {
	Model    string      // served model name (kv.DefaultModel)
	Geometry kv.Geometry // KV and compute shape (the preset of Model, else the default model's)

	BlockSize           int // tokens per KV block (16)
	GPUBlocks           int // GPU KV pool (16384 blocks)
	CPUBlocks           int // CPU offload store; 0: no offload
	MaxModelLen         int // prompt + max_tokens limit (131072)
	MaxNumBatchedTokens int // token budget of one engine step (8192)

	// EnablePromptTokensDetails adds usage.prompt_tokens_details
	// {cached_tokens} when tokens were cached, as vLLM's
	// --enable-prompt-tokens-details.
	EnablePromptTokensDetails bool

	Profile Profile // cost model (h20 when Name is empty)
	// TimeScale multiplies every modeled delay: 1 is real time, 0.01 is
	// 100 times faster, 0 is no delay at all (the zero-cost mode that
	// measures what a client adds).
	TimeScale float64
	Seed      int64 // fixes generated tokens

	KVPeer   string // consumer: the producer's base URL (else remote_host:remote_port of the params)
	EngineID string // P/D engine id (random when empty)
	Role     string // "", "producer", "consumer" or "both": informational; any server plays both roles
	// Client makes the consumer's pulls from its producer (nil: a client
	// with a 60 s timeout); a MemNet's client for in-memory servers.
	Client *http.Client

	// Version is what GET /version says (DefaultVersion): the vLLM release
	// whose wire format and counters the simulator follows.
	Version string
	// CacheSourceMetrics adds vllm:prompt_tokens_cached_by_source (device,
	// host, p2p), the per-tier split of newer vLLM code.
	CacheSourceMetrics bool

	// MaxRequests bounds the requests served at once (DefaultMaxRequests);
	// one more is answered 503.
	MaxRequests int
	// MaxConns bounds the connections held open by Start's listener
	// (DefaultMaxConns); one more is answered 503 and closed.
	MaxConns int
	// IdleTimeout, when positive, drops a client that sends nothing of
	// its request body, or takes nothing of a stream, for that long.
	IdleTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultVersion     = "0.18.1"
	DefaultBlockSize   = 16
	DefaultGPUBlocks   = 16384
	DefaultMaxModelLen = 131072
	DefaultMaxBatched  = 8192
)

// fillDefaults fills the zero fields of c with their defaults.
func (c *Config) fillDefaults() {
	c.Model = cmp.Or(c.Model, kv.DefaultModel)
	c.Version = cmp.Or(c.Version, DefaultVersion)
	c.BlockSize = cmp.Or(c.BlockSize, DefaultBlockSize)
	c.GPUBlocks = cmp.Or(c.GPUBlocks, DefaultGPUBlocks)
	c.MaxModelLen = cmp.Or(c.MaxModelLen, DefaultMaxModelLen)
	c.MaxNumBatchedTokens = cmp.Or(c.MaxNumBatchedTokens, DefaultMaxBatched)
	c.MaxRequests = cmp.Or(c.MaxRequests, DefaultMaxRequests)
	c.MaxConns = cmp.Or(c.MaxConns, DefaultMaxConns)
	if c.Profile.Name == "" {
		c.Profile = h20
	}
	if c.Geometry.Layers == 0 {
		g, err := kv.LookupModel(c.Model)
		if err != nil {
			g, _ = kv.LookupModel(kv.DefaultModel)
		}
		c.Geometry = g
	}
	c.Geometry.BlockTokens = c.BlockSize
}

func (c *Config) setDefaults() error {
	var errs []error
	c.fillDefaults()
	for _, f := range []struct {
		name string
		v    int
	}{
		{"block-size", c.BlockSize}, {"gpu-blocks", c.GPUBlocks},
		{"max-model-len", c.MaxModelLen}, {"max-num-batched-tokens", c.MaxNumBatchedTokens},
		{"limit-concurrency", c.MaxRequests}, {"max-conns", c.MaxConns},
	} {
		errs = append(errs, option.Positive(f.name, f.v))
	}
	errs = append(errs, option.NotNegative("cpu-blocks", c.CPUBlocks), option.NotNegative("time-scale", c.TimeScale))
	switch c.Role {
	case "", "producer", "consumer", "both":
	default:
		errs = append(errs, fmt.Errorf("role %q: want producer, consumer or both", c.Role))
	}
	if c.Geometry.Vocab < len(words)+16 {
		c.Geometry.Vocab = 151936
	}
	if err := c.Geometry.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.EngineID == "" {
		var b [8]byte
		rand.Read(b[:])
		c.EngineID = "sim-" + hex.EncodeToString(b[:])
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	return nil
}

// A Server is one simulated vLLM instance. It is an http.Handler; Start
// also listens and serves. Its engine runs from New until Close.
type Server struct {
	cfg     Config
	tok     tokenizer
	eng     *engine
	handler http.Handler
	client  *http.Client
	started time.Time
	nextID  atomic.Uint64

	// pending are producer requests (do_remote_decode) still running, by
	// internal and X-Request-Id, closed when they finish.
	pmu     sync.Mutex
	pending map[string]chan struct{}
	alias   map[string]string // X-Request-Id -> internal id of held KV

	// lag records how far the engine fell behind real time.
	lag lagMeter
	// stall, when not nil, runs after each step's wait: tests make the
	// engine late with it.
	stall func()

	// life ends when the server closes; every request's context with it.
	life      context.Context
	end       context.CancelFunc
	loopDone  chan struct{}
	closeOnce sync.Once
	smu       sync.Mutex
	servers   []*http.Server
}

// New returns a server for cfg with its engine running.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		tok:      tokenizer{vocab: cfg.Geometry.Vocab},
		client:   cfg.Client,
		started:  time.Now(),
		pending:  map[string]chan struct{}{},
		alias:    map[string]string{},
		loopDone: make(chan struct{}),
	}
	if s.client == nil {
		s.client = &http.Client{Timeout: 60 * time.Second}
	}
	s.life, s.end = context.WithCancel(context.Background())
	s.eng = newEngine(engineConfigOf(cfg))
	s.routes()
	go s.loop()
	return s, nil
}

// engineConfigOf is the engine a server of cfg (defaults filled in) runs.
func engineConfigOf(cfg Config) engineConfig {
	return engineConfig{
		blockSize:  cfg.BlockSize,
		gpuBlocks:  cfg.GPUBlocks,
		cpuBlocks:  cfg.CPUBlocks,
		budget:     cfg.MaxNumBatchedTokens,
		vocabWords: len(words),
		seed:       cfg.Seed,
		connector:  cfg.KVPeer != "" || cfg.Role != "",
		cost:       newCostModel(cfg.Geometry, cfg.Profile),
	}
}

// Lag returns the most the engine's modeled schedule has fallen behind
// the wall clock since the server started (see lagMeter): how far a
// loaded machine made it fall behind real time. Tokens of late steps
// still carry their modeled times in the engine, but reach clients late.
func (s *Server) Lag() time.Duration { return s.lag.most() }

// Config returns the server's configuration with defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Start listens on addr (":0" picks a port) and serves until ctx is done
// or Close is called. It returns the base URL, http://HOST:PORT.
func (s *Server) Start(ctx context.Context, addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("sim: listen: %w", err)
	}
	hs := s.serveOn(ln)
	go func() {
		select {
		case <-ctx.Done():
		case <-s.life.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			hs.Close()
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// serveOn serves on ln until Close.
func (s *Server) serveOn(ln net.Listener) *http.Server {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: maxHeaderBytes, IdleTimeout: s.cfg.IdleTimeout}
	s.smu.Lock()
	s.servers = append(s.servers, hs)
	s.smu.Unlock()
	go hs.Serve(&connLimit{Listener: ln, max: s.cfg.MaxConns})
	return hs
}

// Close stops the engine and the listeners Start opened.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.end()
		<-s.loopDone
		s.smu.Lock()
		defer s.smu.Unlock()
		for _, hs := range s.servers {
			hs.Close()
		}
	})
	return nil
}

// scaled converts modeled seconds to a wall-clock duration.
func (s *Server) scaled(modeled float64) time.Duration {
	return time.Duration(modeled * s.cfg.TimeScale * float64(time.Second))
}

// modelNow is the modeled time wall-clock now corresponds to.
func (s *Server) modelNow() float64 {
	if s.cfg.TimeScale <= 0 {
		return 0
	}
	return time.Since(s.started).Seconds() / s.cfg.TimeScale
}

// submit hands r to the engine. An idle engine's clock catches up with
// the wall clock first; a busy one keeps its own, so that the steps it
// runs back to back keep their modeled durations.
func (s *Server) submit(r *request) {
	e := s.eng
	e.mu.Lock()
	now := s.modelNow()
	if !e.busy() {
		e.vt = max(e.vt, now)
	}
	e.submit(r, max(e.vt, now))
	e.mu.Unlock()
}

// loop drives the engine: plan a step, sleep until the wall-clock
// deadline its modeled end maps to, apply it. Modeled time follows the
// steps while the engine is busy and catches up with the wall clock only
// after it was idle: the loop's own overhead and timer lateness delay one
// step's tokens but never the modeled time of the next (the deadline of
// each step is absolute), so a decode's token period stays the modeled
// one. Idle, it waits for work or for the next load to complete. With
// TimeScale 0 modeled time only advances by the steps themselves.
func (s *Server) loop() {
	defer close(s.loopDone)
	e := s.eng
	idle := time.NewTicker(time.Second)
	defer idle.Stop()
	wasIdle := true
	for {
		e.mu.Lock()
		if wasIdle {
			e.vt = max(e.vt, s.modelNow())
		}
		e.expireHeld(time.Now())
		p := e.schedule()
		if len(p.items) == 0 {
			wasIdle = true
			next, loading := e.nextLoad()
			if loading && s.cfg.TimeScale == 0 {
				e.vt = max(e.vt, next)
				e.mu.Unlock()
				continue
			}
			var due <-chan time.Time
			if loading {
				due = time.After(time.Until(s.started.Add(s.scaled(next))) + time.Microsecond)
			}
			e.mu.Unlock()
			select {
			case <-s.life.Done():
				return
			case <-e.wake:
				// Let requests arriving at this same instant queue too
				// before the first step is planned (see engine.submit).
				if s.cfg.TimeScale > 0 && wait.For(s.life, settle) != nil {
					return
				}
				s.wokenLate()
			case <-due:
			case <-idle.C:
			}
			continue
		}
		wasIdle = false
		end := e.vt + p.dur
		e.mu.Unlock()
		if !s.waitUntil(end) {
			return
		}
		e.mu.Lock()
		e.vt = end
		e.finish(p, end)
		e.mu.Unlock()
	}
}

// settle is how long an idle engine, woken by a request, waits for the
// others arriving with it: far below a step, so nothing measurable.
const settle = 20 * time.Microsecond

// waitUntil sleeps until the wall-clock time modeled time end maps to; it
// reports false when the server closed meanwhile.
func (s *Server) waitUntil(end float64) bool {
	if s.cfg.TimeScale > 0 {
		deadline := s.started.Add(s.scaled(end))
		s.lag.inFlight(deadline)
		defer s.lag.inFlight(time.Time{})
		if wait.Until(s.life, deadline) != nil {
			return false
		}
		if s.stall != nil {
			s.stall()
		}
		s.lag.observe(time.Since(deadline))
		return true
	}
	return s.life.Err() == nil
}

// wokenLate records how long after the newest waiting request arrived
// the engine, idle until it came, took it up, beyond the settle wait.
func (s *Server) wokenLate() {
	e := s.eng
	e.mu.Lock()
	late := time.Duration(0)
	if len(e.waiting) > 0 {
		newest := e.waiting[0].arrival
		for _, r := range e.waiting[1:] {
			newest = max(newest, r.arrival)
		}
		late = s.scaled(s.modelNow()-newest) - settle
	}
	e.mu.Unlock()
	s.lag.observe(late)
}

// requestID returns the internal id of a request: prefix plus the
// client's X-Request-Id, or a fresh number.
func (s *Server) requestID(prefix string, r *http.Request) string {
	if x := strings.TrimSpace(r.Header.Get("X-Request-Id")); x != "" {
		return prefix + x
	}
	return fmt.Sprintf("%s%016x", prefix, s.nextID.Add(1))
}
