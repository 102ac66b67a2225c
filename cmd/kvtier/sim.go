package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
)

// simOptions are the flags of kvtier sim.
type simOptions struct {
	listen, model, modelConfig, served string
	blockSize, gpuBlocks, cpuBlocks    int
	maxModelLen, maxBatched            string
	details                            bool
	profile, calibrate                 string
	timeScale                          float64
	kvPeer, engineID, role             string
	seed                               uint64
}

// config validates the options, reporting every problem at once, and
// returns the simulator's configuration.
func (o simOptions) config() (vllmsim.Config, error) {
	var errs []error
	cfg := vllmsim.Config{
		BlockSize: o.blockSize, GPUBlocks: o.gpuBlocks, CPUBlocks: o.cpuBlocks,
		EnablePromptTokensDetails: o.details, TimeScale: o.timeScale, Seed: int64(o.seed),
		KVPeer: strings.TrimRight(o.kvPeer, "/"), EngineID: o.engineID, Role: o.role,
	}
	if strings.TrimSpace(o.listen) == "" {
		errs = append(errs, errors.New("--listen: empty address"))
	}
	var g kv.Geometry
	var err error
	if o.modelConfig != "" {
		g, err = kv.ParseConfig(o.modelConfig)
		if err != nil {
			errs = append(errs, fmt.Errorf("--model-config: %w", err))
		}
	} else {
		g, err = kv.LookupModel(o.model)
		if err != nil {
			errs = append(errs, fmt.Errorf("--model: %w", err))
		}
	}
	cfg.Geometry = g
	cfg.Model = o.served
	if cfg.Model == "" {
		cfg.Model = o.model
		if o.modelConfig != "" && g.Model != "" {
			cfg.Model = g.Model
		}
	}
	if o.blockSize < 1 {
		errs = append(errs, fmt.Errorf("--block-size: must be positive, got %d", o.blockSize))
	}
	if o.gpuBlocks < 1 {
		errs = append(errs, fmt.Errorf("--gpu-blocks: must be positive, got %d", o.gpuBlocks))
	}
	if o.cpuBlocks < 0 {
		errs = append(errs, fmt.Errorf("--cpu-blocks: must not be negative, got %d", o.cpuBlocks))
	}
	for _, f := range []struct {
		name, v string
		dst     *int
	}{
		{"--max-model-len", o.maxModelLen, &cfg.MaxModelLen},
		{"--max-num-batched-tokens", o.maxBatched, &cfg.MaxNumBatchedTokens},
	} {
		n, err := units.ParseTokens(f.v)
		if err == nil && n < 1 {
			err = fmt.Errorf("must be positive, got %q", f.v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.name, err))
			continue
		}
		*f.dst = n
	}
	if o.timeScale < 0 {
		errs = append(errs, fmt.Errorf("--time-scale: must not be negative, got %g", o.timeScale))
	}
	if o.calibrate != "" {
		cfg.Profile, err = vllmsim.ProfileFromCSV(o.calibrate)
		if err != nil {
			errs = append(errs, fmt.Errorf("--calibrate: %w", err))
		}
	} else {
		cfg.Profile, err = vllmsim.LookupProfile(o.profile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--profile: %w", err))
		}
	}
	if o.kvPeer != "" {
		u, err := url.Parse(o.kvPeer)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--kv-peer: %q is not an http:// base URL", o.kvPeer))
		}
	}
	switch o.role {
	case "", "producer", "consumer", "both":
	default:
		errs = append(errs, fmt.Errorf("--role: %q: want producer, consumer or both", o.role))
	}
	return cfg, errors.Join(errs...)
}

// runSim serves a simulated vLLM instance until interrupted.
func runSim(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("sim", "Usage: kvtier sim [flags]\n\nServes a simulated vLLM instance: OpenAI API, vLLM metrics, prefix cache,\nCPU offload and P/D, with delays from a cost model. Every response carries\nX-Kvtier-Simulated: 1 and /metrics has kvtier_simulated 1.", stderr)
	var o simOptions
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8000", "HOST:PORT to serve on (:0 picks a port)")
	fs.StringVar(&o.model, "model", kv.DefaultModel, "model preset ("+strings.Join(kv.ModelNames(), ", ")+"): KV geometry and compute")
	fs.StringVar(&o.modelConfig, "model-config", "", "Hugging Face config.json of the model, instead of a preset")
	fs.StringVar(&o.served, "served-model-name", "", "model name the API answers to (default --model)")
	fs.IntVar(&o.blockSize, "block-size", vllmsim.DefaultBlockSize, "tokens per KV block")
	fs.IntVar(&o.gpuBlocks, "gpu-blocks", vllmsim.DefaultGPUBlocks, "KV blocks in the simulated GPU pool")
	fs.IntVar(&o.cpuBlocks, "cpu-blocks", 0, "KV blocks of CPU offload (0: none); hits there count as external prefix cache hits")
	fs.StringVar(&o.maxModelLen, "max-model-len", "131072", "longest prompt + max_tokens (tokens; k = 1024)")
	fs.StringVar(&o.maxBatched, "max-num-batched-tokens", "8192", "token budget of one engine step: the chunked-prefill size")
	fs.BoolVar(&o.details, "enable-prompt-tokens-details", false, "report usage.prompt_tokens_details.cached_tokens, as vLLM's flag")
	fs.StringVar(&o.profile, "profile", vllmsim.DefaultProfile, "cost model: "+strings.Join(vllmsim.ProfileNames(), ", "))
	fs.StringVar(&o.calibrate, "calibrate", "", "sweep.csv of a kvtier sweep: take bandwidths and FLOP rates from it (instead of --profile)")
	fs.Float64Var(&o.timeScale, "time-scale", 1, "multiply every modeled delay: 1 real time, 0.01 100x faster, 0 no delay")
	fs.StringVar(&o.kvPeer, "kv-peer", "", "P/D consumer: base URL of the producer to pull KV from (default: remote_host:remote_port of the request)")
	fs.StringVar(&o.engineID, "engine-id", "", "P/D engine id (default random)")
	fs.StringVar(&o.role, "role", "", "P/D role, for the record: producer, consumer or both (any instance plays both)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the generated tokens")
	if code, ok := parseNoArgs(fs, args, stderr); !ok {
		return code
	}
	cfg, err := o.config()
	if err != nil {
		return usageErr(stderr, "sim", err)
	}
	s, err := vllmsim.New(cfg)
	if err != nil {
		return usageErr(stderr, "sim", err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u, err := s.Start(ctx, o.listen)
	if err != nil {
		return usageErr(stderr, "sim", fmt.Errorf("--listen %s: %w", o.listen, err))
	}
	c := s.Config()
	fmt.Fprintf(stdout, "kvtier sim: serving %s (simulated) on %s\n", c.Model, u)
	fmt.Fprintf(stderr, "kvtier sim: profile %s [%s], time scale %g, %d GPU blocks, %d CPU blocks, block %d, chunk %d, engine id %s\n",
		c.Profile.Name, c.Profile.Source, c.TimeScale, c.GPUBlocks, c.CPUBlocks, c.BlockSize, c.MaxNumBatchedTokens, c.EngineID)
	<-ctx.Done()
	return exitOK
}
