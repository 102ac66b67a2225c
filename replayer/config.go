package replayer

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/serving"
)

// A Dispatch says when a replay sends each request.
type Dispatch string

// Dispatch modes.
const (
	// DispatchTimestamp sends each request at its trace time divided by
	// the speedup, whatever the server's answers (open loop).
	DispatchTimestamp Dispatch = "timestamp"
	// DispatchSession runs sessions closed loop: a turn is sent when the
	// previous one finished plus its think time.
	DispatchSession Dispatch = "session"
)

// A Config says how a workload is replayed against a server.
type Config struct {
	Suite    string       // the suite its request rows name (kvtier replay's, kvtier knee's)
	Endpoint string       // base URL of the server
	Model    string       // served model name; "" takes the first of GET /v1/models
	API      string       // completions (default) | chat
	HTTP     *http.Client // nil: a client of its own
	Dispatch Dispatch
	// Speedup divides trace times and think times (1: as recorded).
	Speedup float64
	// Concurrency is, for timestamp dispatch, the most requests in
	// flight (a request due while they are waits); for session dispatch,
	// the sessions run at once. 0: no limit, every session at once.
	Concurrency int
	// Duration stops sending requests this long after the start; those
	// in flight finish. 0: no limit.
	Duration time.Duration
	// Think is the think time of a session's turn the trace gives no gap
	// to its parent for.
	Think     time.Duration
	MaxOutput int           // caps max_tokens (0: the trace's output_length)
	Timeout   time.Duration // of one request
	// Idle fails a request whose server sends nothing for that long
	// (serving.Client.Idle); 0 none.
	Idle time.Duration
	// MaxTimeouts stops sending after that many consecutive requests
	// timed out (serving.Client.SetMaxTimeouts); 0 never.
	MaxTimeouts int
	// SLOTTFT and SLOTPOT are the service-level objectives goodput counts
	// requests against; 0: none.
	SLOTTFT, SLOTPOT time.Duration
	Seed             uint64
	// Nonce makes this run's prompts differ from every earlier run's (a
	// server keeps its cache between runs); 0 picks one from the clock.
	Nonce     uint64
	BlockSize int // the server's KV block; 0: from vllm:cache_config_info
	GPUBlocks int // the server's KV pool; 0: from vllm:cache_config_info
	// BlockBytes returns the KV bytes of one block of the served model,
	// for the byte columns; 0 when its geometry is unknown. nil means
	// unknown.
	BlockBytes func(model string, blockSize int) int64
	Simulated  bool // the server is a kvtier sim
	// ServerLog is the server's log (--server-log, or the log of the
	// server knee started): its cache lines count the cached tokens of
	// requests whose responses do not (Ollama with OLLAMA_DEBUG=1); nil
	// none.
	ServerLog *serving.ServerLog
	Log       io.Writer // one line per request; nil for none
}

// Bounds of a replay: past them a figure is a mistake.
const (
	maxSpeedup     = 1e6
	maxConcurrency = 1 << 16 // requests or sessions at once, each a connection
)

// Validate reports every unusable field, naming its option.
func (c Config) Validate() error {
	var errs []error
	if c.Endpoint == "" {
		errs = append(errs, option.Errorf("base-url", "required"))
	} else if _, err := serving.NewClient(c.Endpoint, time.Second); err != nil {
		errs = append(errs, option.Wrap("base-url", err))
	}
	if c.Dispatch != DispatchTimestamp && c.Dispatch != DispatchSession {
		errs = append(errs, option.Errorf("dispatch", "%q: want timestamp or session", c.Dispatch))
	}
	if !(c.Speedup > 0 && c.Speedup <= maxSpeedup) {
		errs = append(errs, option.Errorf("speedup", "%g: want more than 0, up to %g", c.Speedup, float64(maxSpeedup)))
	}
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{{"max-concurrency", c.Concurrency, maxConcurrency}, {"max-output", c.MaxOutput, serving.MaxPromptTokens},
		{"block-size", c.BlockSize, kv.MaxBlockTokens}, {"gpu-blocks", c.GPUBlocks, 1 << 30}} {
		errs = append(errs, option.Range(f.name, f.v, 0, f.max))
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"duration", c.Duration}, {"think", c.Think}, {"slo-ttft", c.SLOTTFT}, {"slo-tpot", c.SLOTPOT}} {
		errs = append(errs, option.NotNegative(f.name, f.v))
	}
	errs = append(errs, option.Positive("timeout", c.Timeout), option.NotNegative("idle-timeout", c.Idle), serving.CheckAPI(c.API),
		option.Range("max-timeouts", c.MaxTimeouts, 0, serving.MaxReps))
	return errors.Join(errs...)
}
