package replayer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/workload"
)

// Info is what a Replayer learnt about the server before sending.
type Info struct {
	Endpoint     string // redacted
	Model        string
	MaxModelLen  int // 0 unknown
	BlockSize    int
	BlockSource  string // "--block-size", "vllm:cache_config_info", "assumed (vLLM default)"
	GPUBlocks    int    // 0 unknown: no prediction
	GPUSource    string
	Version      string // GET /version, "" unknown
	Family       serving.Family
	MetricsError string // why /metrics could not be read at the start
	PromptForm   string // token_ids | text | chat: the form prompts go in
	WarmError    string // why the warm-up request failed, "" when it did not
	Simulated    bool
	Nonce        uint64
	// BytesPerToken is the KV of one token of the served model; 0
	// unknown.
	BytesPerToken int64
}

// CapacityTokens is the server's KV pool in tokens, 0 unknown.
func (i Info) CapacityTokens() int64 { return int64(i.GPUBlocks) * int64(i.BlockSize) }

// A Replayer sends one workload to one server.
type Replayer struct {
	cfg     Config
	w       *Workload
	c       *serving.Client
	info    Info
	prompts Prompts
	pred    *predictor
}

// New connects to the server: it lists the models (an error wrapping
// serving.ErrUnreachable if that fails), reads /version and /metrics (the
// cache configuration), and refuses a workload whose blocks are not a
// whole number of the server's.
func New(ctx context.Context, cfg Config, w *Workload) (*Replayer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := serving.NewMeasuringClient(cfg.Endpoint, cfg.Timeout, cfg.Idle, cfg.HTTP, cfg.MaxTimeouts)
	if err != nil {
		return nil, err
	}
	rp := &Replayer{cfg: cfg, w: w, c: c}
	rp.info.Endpoint = redact.URL(cfg.Endpoint)
	m, err := c.ServedModel(ctx, cfg.Model)
	if err != nil {
		return nil, err
	}
	rp.info.Model, rp.info.MaxModelLen = m.ID, m.MaxModelLen
	rp.info.Simulated = cfg.Simulated || c.Simulated()
	// One request before the counters are read: it loads a lazily
	// loaded model and learns the prompt form the server takes.
	// A failed warm-up is no reason to stop: the requests' rows will
	// say what fails.
	if rp.info.PromptForm, err = c.Warm(ctx, m.ID, cfg.API); err != nil {
		rp.info.WarmError = serving.OneLine(err.Error())
	}
	rp.learn(ctx)
	if w.BlockTokens%rp.info.BlockSize != 0 {
		return nil, fmt.Errorf("the workload's blocks of %d tokens are not a whole number of the server's %d-token blocks (%s): its prompts cannot realize the trace's sharing; give --trace-block a multiple of %d",
			w.BlockTokens, rp.info.BlockSize, rp.info.BlockSource, rp.info.BlockSize)
	}
	if cfg.BlockBytes != nil {
		rp.info.BytesPerToken = cfg.BlockBytes(rp.info.Model, rp.info.BlockSize) / int64(rp.info.BlockSize)
	}
	rp.info.Nonce = cfg.Nonce
	if rp.info.Nonce == 0 {
		rp.info.Nonce = uint64(time.Now().UnixNano()) // a nonce for unique prompts, not a duration
	}
	rp.prompts = Prompts{Seed: mixSeed(cfg.Seed, rp.info.Nonce)}
	capBlocks := rp.info.CapacityTokens() / int64(w.BlockTokens)
	if rp.pred, err = newPredictor(capBlocks); err != nil {
		return nil, err
	}
	return rp, nil
}

// learn reads the server's version and cache configuration.
func (rp *Replayer) learn(ctx context.Context) {
	rp.info.Family = rp.c.DetectFamily(ctx)
	switch {
	case rp.cfg.ServerLog == nil:
	case rp.info.Family.Traits().CacheLog == "":
		// Its log counts nothing kvtier reads (a vLLM knee starts).
		if rp.cfg.Log != nil {
			fmt.Fprintf(rp.cfg.Log, "kvtier %s: the server log %s is not read: %s writes no cache lines kvtier knows\n", rp.cfg.Suite, rp.cfg.ServerLog.Path(), rp.info.Family.Traits().Title)
		}
		rp.cfg.ServerLog = nil
	default:
		rp.cfg.ServerLog.Expect()
	}
	if v, err := rp.c.Version(ctx); err == nil {
		rp.info.Version = v
	} else {
		rp.info.Version = rp.info.Family.Version
	}
	snap, err := rp.c.Metrics(ctx, rp.info.Model)
	if err != nil {
		rp.info.MetricsError = err.Error()
	}
	rp.info.BlockSize, rp.info.BlockSource = snap.BlockSizeFor(rp.cfg.BlockSize, rp.info.Family)
	switch {
	case rp.cfg.GPUBlocks > 0:
		rp.info.GPUBlocks, rp.info.GPUSource = rp.cfg.GPUBlocks, "--gpu-blocks"
	case snap.GPUBlocks() > 0:
		rp.info.GPUBlocks, rp.info.GPUSource = snap.GPUBlocks(), "vllm:cache_config_info"
	default:
		rp.info.GPUSource = "unknown (" + rp.info.Family.NoPoolSize() + "): no prediction"
	}
}

// Tripped returns an error wrapping serving.ErrTimeouts once too many
// consecutive requests timed out (Config.MaxTimeouts): the requests
// after were skipped.
func (rp *Replayer) Tripped() error { return rp.c.Tripped() }

// Info returns what New learnt about the server.
func (rp *Replayer) Info() Info { return rp.info }

// A predictor is the trace's LRU model fed the requests in the order
// they are sent: the hit it predicts for each at the server's capacity.
type predictor struct {
	mu       sync.Mutex
	a        *workload.Analyzer
	capacity int64 // in hash-id blocks; 0: unknown
	seq      int
	hit      int
}

func newPredictor(capacity int64) (*predictor, error) {
	p := &predictor{capacity: capacity}
	a, err := workload.NewAnalyzer(workload.AnalyzeOptions{
		BytesPerToken: 1, Touch: workload.TouchReverse,
		OnRequest: func(_ *workload.Request, h *workload.Hits) { p.hit = h.HitTokens(p.capacity) },
	})
	p.a = a
	return p, err
}

// predict adds r as the next request sent and returns the tokens the
// model says a cache of the server's capacity serves it; ok is false
// when the capacity is unknown.
func (p *predictor) predict(r *workload.Request) (hit int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := *r
	c.Time = float64(p.seq)
	p.seq++
	if err := p.a.Add(&c); err != nil {
		return 0, false
	}
	return p.hit, p.capacity > 0
}
