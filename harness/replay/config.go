package replay

import (
	"errors"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/option"
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
	Endpoint string       // base URL of the server
	Model    string       // served model name; "" takes the first of GET /v1/models
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
	Simulated  bool      // the server is a kvtier sim
	Log        io.Writer // one line per request; nil for none
}

// Validate reports every unusable field, naming its option.
func (c Config) Validate() error {
	var errs []error
	if c.Endpoint == "" {
		errs = append(errs, option.Errorf("endpoint", "required"))
	} else if _, err := probe.NewClient(c.Endpoint, time.Second); err != nil {
		errs = append(errs, option.Wrap("endpoint", err))
	}
	if c.Dispatch != DispatchTimestamp && c.Dispatch != DispatchSession {
		errs = append(errs, option.Errorf("dispatch", "%q: want timestamp or session", c.Dispatch))
	}
	if !(c.Speedup > 0) || math.IsInf(c.Speedup, 0) {
		errs = append(errs, option.Errorf("speedup", "%g: must be positive", c.Speedup))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"concurrency", c.Concurrency}, {"max-output", c.MaxOutput}, {"block-size", c.BlockSize}, {"gpu-blocks", c.GPUBlocks}} {
		if f.v < 0 {
			errs = append(errs, option.Errorf(f.name, "%d: must not be negative", f.v))
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"duration", c.Duration}, {"think", c.Think}, {"slo-ttft", c.SLOTTFT}, {"slo-tpot", c.SLOTPOT}} {
		if f.v < 0 {
			errs = append(errs, option.Errorf(f.name, "%v: must not be negative", f.v))
		}
	}
	if c.Timeout <= 0 {
		errs = append(errs, option.Errorf("timeout", "%v: must be positive", c.Timeout))
	}
	return errors.Join(errs...)
}
