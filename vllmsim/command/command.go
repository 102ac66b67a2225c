// Package command is kvtier sim: a simulated vLLM server on a port, for
// clients and for kvtier knee's --server-cmd. It is a package of its own
// so that vllmsim itself builds without cgo.
package command

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
)

// Command is kvtier sim.
var Command = cli.Register(&cli.Command{Name: "sim", Order: 70, Run: cli.Bound(runCommand),
	Summary: "a simulated vLLM server (OpenAI API, prefix cache, offload, P/D)",
	Usage:   "Usage: kvtier sim [flags]\n\nServes a simulated vLLM instance: OpenAI API, vLLM metrics, prefix cache,\nCPU offload and P/D, with delays from a cost model. Every response carries\nX-Kvtier-Simulated: 1 and /metrics has kvtier_simulated 1."})

// simOptions are the flags of kvtier sim.
type simOptions struct {
	listen, served          string
	model                   cli.ModelFlags
	gpuBlocks, cpuBlocks    int
	maxModelLen, maxBatched string
	details                 bool
	profile, calibrate      string
	timeScale, hostStore    float64
	kvPeer, engineID, role  string
	seed                    uint64
	maxRequests, maxConns   int
	idle                    time.Duration
}

// Limits of the simulated engine: beyond them a pool or a step is a
// mistake, and tables sized from them would not fit in memory.
const (
	maxSimBlocks = 1 << 24 // blocks in the GPU or CPU pool
	maxSimTokens = 1 << 24 // max-model-len, max-num-batched-tokens
	maxSimConns  = 1 << 20 // limit-concurrency, max-conns
)

// Resolve validates the options, reporting every problem at once, and
// returns the simulator's configuration.
func (o *simOptions) Resolve() (vllmsim.Config, error) {
	var errs []error
	cfg := vllmsim.Config{
		GPUBlocks: o.gpuBlocks, CPUBlocks: o.cpuBlocks,
		EnablePromptTokensDetails: o.details, TimeScale: o.timeScale, Seed: int64(o.seed),
		KVPeer: strings.TrimRight(o.kvPeer, "/"), EngineID: o.engineID, Role: o.role,
		MaxRequests: o.maxRequests, MaxConns: o.maxConns, IdleTimeout: o.idle,
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"limit-concurrency", o.maxRequests}, {"max-conns", o.maxConns}} {
		errs = append(errs, option.Range(f.name, f.v, 1, maxSimConns))
	}
	if strings.TrimSpace(o.listen) == "" {
		errs = append(errs, option.Errorf("listen", "empty address"))
	}
	g, err := o.model.Geometry()
	errs = append(errs, err)
	cfg.Geometry, cfg.BlockSize = g, o.model.BlockSize
	cfg.Model = cmp.Or(o.served, o.model.Model, g.Model, kv.DefaultModel)
	errs = append(errs, option.Range("gpu-blocks", o.gpuBlocks, 1, maxSimBlocks), option.Range("cpu-blocks", o.cpuBlocks, 0, maxSimBlocks))
	cfg.MaxModelLen = tokenFlag(&errs, "max-model-len", o.maxModelLen)
	cfg.MaxNumBatchedTokens = tokenFlag(&errs, "max-num-batched-tokens", o.maxBatched)
	errs = append(errs, option.Range("time-scale", o.timeScale, 0, 1e6, "0: no delay"))
	cfg.Profile, err = o.costProfile()
	errs = append(errs, err, o.checkPD(), option.Range("host-store-gbps", o.hostStore, 0, 1e6, "0: the profile's"))
	if o.hostStore > 0 {
		cfg.Profile.HostStoreGBps, cfg.Profile.Assumed = o.hostStore, ""
	}
	return cfg, errors.Join(errs...)
}

// tokenFlag parses a token count flag from 1 to maxSimTokens.
func tokenFlag(errs *[]error, name, v string) int {
	n, err := units.ParseTokens(v)
	if err == nil && (n < 1 || n > maxSimTokens) {
		err = fmt.Errorf("want 1 to %d tokens, got %q", maxSimTokens, v)
	}
	*errs = append(*errs, option.Wrap(name, err))
	return n
}

// costProfile is the calibration's profile, or the named one.
func (o *simOptions) costProfile() (vllmsim.Profile, error) {
	if o.calibrate != "" {
		p, err := vllmsim.ProfileFromCSV(o.calibrate)
		return p, option.Wrap("calibrate", err)
	}
	p, err := vllmsim.LookupProfile(o.profile)
	return p, option.Wrap("profile", err)
}

// checkPD checks the disaggregated-prefill flags.
func (o *simOptions) checkPD() error {
	var errs []error
	if o.kvPeer != "" {
		u, err := url.Parse(o.kvPeer)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, option.Errorf("kv-peer", "%q is not an http:// base URL", o.kvPeer))
		}
	}
	switch o.role {
	case "", "producer", "consumer", "both":
	default:
		errs = append(errs, option.Errorf("role", "%q: want producer, consumer or both", o.role))
	}
	return errors.Join(errs...)
}

// assumedNote labels a profile's store rate assumed when no measurement
// gave it.
func assumedNote(p vllmsim.Profile) string {
	if p.Assumed != "" {
		return ", assumed"
	}
	return ""
}

// Bind adds the flags to fs.
func (o *simOptions) Bind(fs *pflag.FlagSet, _ *cli.Call) {
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8000", "HOST:PORT to serve on (:0 picks a port)")
	o.model.Add(fs)
	fs.StringVar(&o.served, "served-model-name", "", "model name the API answers to (default --model)")
	fs.IntVar(&o.gpuBlocks, "gpu-blocks", vllmsim.DefaultGPUBlocks, "KV blocks in the simulated GPU pool")
	fs.IntVar(&o.cpuBlocks, "cpu-blocks", 0, "KV blocks of CPU offload (0: none); hits there count as external prefix cache hits")
	fs.StringVar(&o.maxModelLen, "max-model-len", "131072", "longest prompt + max_tokens (tokens; k = 1024)")
	fs.StringVar(&o.maxBatched, "max-num-batched-tokens", "8192", "token budget of one engine step: the chunked-prefill size")
	fs.BoolVar(&o.details, "enable-prompt-tokens-details", false, "report usage.prompt_tokens_details.cached_tokens, as vLLM's flag")
	fs.StringVar(&o.profile, "profile", vllmsim.DefaultProfile, "cost model: "+strings.Join(vllmsim.ProfileNames(), ", "))
	fs.StringVar(&o.calibrate, "calibrate", "", "sweep.csv of a kvtier sweep: take bandwidths and FLOP rates from it (instead of --profile)")
	fs.Float64Var(&o.hostStore, "host-store-gbps", 0, "GB/s of the CPU offload's stores, device to host, beside the loads (PCIe is full duplex); 0: the profile's (h20: its load rate, assumed: no store was measured)")
	fs.Float64Var(&o.timeScale, "time-scale", 1, "multiply every modeled delay: 1 real time, 0.01 100x faster, 0 no delay")
	fs.StringVar(&o.kvPeer, "kv-peer", "", "P/D consumer: base URL of the producer to pull KV from (default: remote_host:remote_port of the request)")
	fs.StringVar(&o.engineID, "engine-id", "", "P/D engine id (default random)")
	fs.StringVar(&o.role, "role", "", "P/D role, for the record: producer, consumer or both (any instance plays both)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the generated tokens")
	// uvicorn's name (the HTTP server under vLLM's API): a bound past
	// which requests are refused with 503. vLLM's --max-num-seqs, which
	// queues them, would say something else.
	fs.IntVar(&o.maxRequests, "limit-concurrency", vllmsim.DefaultMaxRequests, "requests served at once; one more is answered 503 with a JSON error")
	cli.Alias(fs, "max-requests", "limit-concurrency")
	fs.IntVar(&o.maxConns, "max-conns", vllmsim.DefaultMaxConns, "connections held open; one more is answered 503 and closed")
	cli.AddIdleTimeout(fs, &o.idle)
}

// runCommand serves a simulated vLLM instance until interrupted.
func runCommand(ctx context.Context, c *cli.Call, o *simOptions, cfg vllmsim.Config) int {
	s, err := vllmsim.New(cfg)
	if err != nil {
		return c.UsageErr(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u, err := s.Start(ctx, o.listen)
	if err != nil {
		return c.UsageErr(fmt.Errorf("--listen %s: %w", o.listen, err))
	}
	sc := s.Config()
	fmt.Fprintf(c.Stdout, "kvtier sim: serving %s (simulated) on %s\n", sc.Model, u)
	c.Logf("profile %s [%s], time scale %g, %d GPU blocks, %d CPU blocks (load %g GB/s, store %g GB/s%s), block %d, chunk %d, engine id %s",
		sc.Profile.Name, sc.Profile.Source, sc.TimeScale, sc.GPUBlocks, sc.CPUBlocks, sc.Profile.HostGBps, sc.Profile.HostStoreGBps, assumedNote(sc.Profile),
		sc.BlockSize, sc.MaxNumBatchedTokens, sc.EngineID)
	<-ctx.Done()
	return cli.ExitOK
}
