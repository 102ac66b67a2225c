package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
)

// probeFlags are the raw flag values of kvtier probe.
type probeFlags struct {
	endpoint, producer, connector, model string
	tiers, prefixes, timeout             string
	out                                  outputFlags
	useSim                               bool
	simScale                             float64
	reps, blockSize, bootstrapPort       int
	seed                                 uint64
	evictMargin                          float64
	endpointSet                          bool
}

// config turns the flags into the probe's configuration, reporting every
// problem at once.
func (f *probeFlags) config() (probe.Config, error) {
	var errs []error
	cfg := probe.Config{
		Endpoint: strings.TrimSpace(f.endpoint), Producer: strings.TrimSpace(f.producer),
		Connector: f.connector, BootstrapPort: f.bootstrapPort, Model: f.model,
		Reps: f.reps, Seed: f.seed, EvictMargin: f.evictMargin, BlockSize: f.blockSize,
	}
	if f.useSim {
		if f.endpointSet {
			errs = append(errs, errors.New("--sim and --endpoint exclude each other"))
		}
		if cfg.Producer != "" {
			errs = append(errs, errors.New("--sim starts its own producer: drop --producer"))
		}
		if f.simScale < 0 {
			errs = append(errs, fmt.Errorf("--sim-time-scale %g: must not be negative", f.simScale))
		}
		cfg.Endpoint = "sim" // replaced by the sim's URL once it runs
	} else if cfg.Endpoint == "" {
		errs = append(errs, errors.New("--endpoint URL is required (or KVTIER_ENDPOINT, or --sim)"))
	} else if _, err := probe.NewClient(cfg.Endpoint, time.Second); err != nil {
		errs = append(errs, fmt.Errorf("--endpoint: %w", err))
	}
	if cfg.Producer != "" {
		if _, err := probe.NewClient(cfg.Producer, time.Second); err != nil {
			errs = append(errs, fmt.Errorf("--producer: %w", err))
		}
	}
	cfg.Tiers = listFlag(&errs, "tiers", f.tiers, func(s string) (string, error) {
		s = strings.TrimSpace(s)
		if !slices.Contains(probe.Tiers, s) {
			return "", fmt.Errorf("unknown tier %q (known: %s)", s, strings.Join(probe.Tiers, ", "))
		}
		return s, nil
	}, "miss")
	cfg.Prefixes = listFlag(&errs, "prefix", f.prefixes, units.ParseTokens, 1024)
	cfg.Timeout = durationFlag(&errs, "timeout", f.timeout)
	if !slices.Contains(probe.Connectors, f.connector) {
		errs = append(errs, fmt.Errorf("--connector %q: want %s", f.connector, strings.Join(probe.Connectors, " or ")))
		cfg.Connector = "nixl"
	}
	errs = append(errs, f.out.check())
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

// presetBlockBytes returns the KV bytes of one block of a served model
// whose name matches a geometry preset ("Qwen/Qwen3-Coder-30B-A3B-Instruct"
// matches qwen3-coder-30b-a3b), 0 when none does.
func presetBlockBytes(model string, blockSize int) int64 {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	for _, n := range []string{name, strings.TrimSuffix(name, "-instruct"), strings.TrimSuffix(strings.TrimSuffix(name, "-instruct"), "-2507")} {
		if g, err := kv.LookupModel(n); err == nil {
			g.BlockTokens = blockSize
			return g.BlockBytes()
		}
	}
	return 0
}

// overheadReps is how many 1k prompts measure the client's own floor.
const overheadReps = 7

// clientOverhead measures the probe client's TTFT p50 for a 1k prompt
// against an in-process sim that answers at no cost.
func clientOverhead(ctx context.Context) (time.Duration, error) {
	zero, err := vllmsim.LookupProfile("zero")
	if err != nil {
		return 0, err
	}
	s, err := vllmsim.New(vllmsim.Config{Profile: zero, TimeScale: 0})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	url, err := s.Start(ctx, "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	c, err := probe.NewClient(url, 30*time.Second)
	if err != nil {
		return 0, err
	}
	return probe.Overhead(ctx, c, s.Config().Model, 1024, overheadReps, 1)
}

// startProbeSims starts a consumer sim with CPU offload and, when remote
// is wanted, a producer it pulls from. The GPU pool holds twice the
// longest prefix, so forcing the cpu tier evicts little.
func startProbeSims(ctx context.Context, cfg *probe.Config, scale float64) (func(), error) {
	longest := slices.Max(cfg.Prefixes)
	bs := cfg.BlockSize
	if bs == 0 {
		bs = vllmsim.DefaultBlockSize
	}
	gpu := max(2*longest/bs+64, 1024)
	base := vllmsim.Config{
		Model: cfg.Model, BlockSize: bs, GPUBlocks: gpu,
		MaxModelLen: max(vllmsim.DefaultMaxModelLen, longest+1024), TimeScale: scale,
		EnablePromptTokensDetails: true, Seed: int64(cfg.Seed),
	}
	var servers []*vllmsim.Server
	closeAll := func() {
		for _, s := range servers {
			s.Close()
		}
	}
	start := func(c vllmsim.Config) (string, error) {
		s, err := vllmsim.New(c)
		if err != nil {
			return "", err
		}
		servers = append(servers, s)
		return s.Start(ctx, "127.0.0.1:0")
	}
	consumer := base
	consumer.CPUBlocks = 4 * gpu
	if slices.Contains(cfg.Tiers, "remote") {
		producer := base
		producer.Role = "producer"
		url, err := start(producer)
		if err != nil {
			closeAll()
			return nil, err
		}
		cfg.Producer = url
		consumer.Role, consumer.KVPeer = "consumer", url
	}
	url, err := start(consumer)
	if err != nil {
		closeAll()
		return nil, err
	}
	cfg.Endpoint = url
	cfg.Simulated = true
	return closeAll, nil
}

// runProbe measures the TTFT of a reused prefix in each tier of a vLLM
// server (or an embedded sim) and writes probe.csv.
func runProbe(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("probe", "Usage: kvtier probe --endpoint URL | --sim [flags]\n\nMeasures the time to first token of a prompt whose prefix the server holds nowhere\n(miss), in GPU memory, in CPU memory (offload) or on a producer instance (remote),\nchecking each against the server's /metrics. Writes probe.csv, probe_summary.csv\nand manifest.json.", stderr)
	var f probeFlags
	fs.StringVar(&f.endpoint, "endpoint", os.Getenv("KVTIER_ENDPOINT"), "base URL of the vLLM server measured, e.g. http://127.0.0.1:8000 (env KVTIER_ENDPOINT)")
	fs.BoolVar(&f.useSim, "sim", false, "measure an embedded kvtier sim instead of a server (rows say simulated=true)")
	fs.Float64Var(&f.simScale, "sim-time-scale", 1, "with --sim: scale of the sim's modeled delays (1 real time, 0.1 ten times faster)")
	fs.StringVar(&f.model, "served-model-name", "", "served model name (default: the first of GET /v1/models)")
	alias(fs, "model", "served-model-name")
	fs.StringVar(&f.tiers, "tiers", strings.Join(probe.Tiers, ","), "tiers to force and measure: "+strings.Join(probe.Tiers, ", "))
	fs.StringVar(&f.prefixes, "prefix", "1k,2k,4k,8k,16k,32k,64k", "prompt lengths in tokens (k = 1024)")
	fs.IntVar(&f.reps, "reps", 3, "measured requests per tier and prefix")
	f.out.add(fs)
	fs.StringVar(&f.timeout, "timeout", "120s", "limit of one request")
	fs.StringVar(&f.producer, "producer", "", "remote tier: base URL of the instance that prefills (kv_producer); the endpoint pulls from it")
	fs.StringVar(&f.connector, "connector", "nixl", "remote tier: KV connector protocol, nixl or mooncake")
	fs.IntVar(&f.bootstrapPort, "bootstrap-port", 8998, "remote tier, mooncake: the producer's bootstrap port")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the prompts' token ids")
	fs.Float64Var(&f.evictMargin, "evict-margin", 1.5, "cpu tier: filler tokens sent to evict the GPU cache, as a multiple of the GPU pool")
	fs.IntVar(&f.blockSize, "block-size", 0, "KV block size in tokens (default: from vllm:cache_config_info)")
	if code, ok := parseNoArgs(fs, args, stderr); !ok {
		return code
	}
	f.endpointSet = fs.Changed("endpoint")
	cfg, err := f.config()
	if err != nil {
		return usageErr(stderr, "probe", err)
	}
	if f.useSim {
		stop, err := startProbeSims(ctx, &cfg, f.simScale)
		if err != nil {
			return usageErr(stderr, "probe", fmt.Errorf("--sim: %w", err))
		}
		defer stop()
	}
	cfg.BlockBytes = presetBlockBytes
	cfg.Log = stderr
	p, err := probe.New(ctx, cfg)
	if err != nil {
		return usageErr(stderr, "probe", err)
	}
	info := p.Info()

	return suiteRun{cmd: "probe", suite: probe.Suite, out: f.out, args: args,
		run: func(ctx context.Context, out *harness.Output) error {
			probeManifest(ctx, stderr, out.Manifest, f, cfg, info)
			if err := out.WriteManifest(); err != nil {
				return err
			}
			sink, err := out.Open(probe.Suite.Main())
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "kvtier probe: %s at %s (block size %d, %s)\n", info.Model, cfg.Endpoint, info.BlockSize, info.BlockSource)
			return p.Run(ctx, sink)
		}}.exec(ctx, stdout, stderr)
}

// probeManifest records the probe's settings, the client's own overhead
// and what /metrics said at start in m.
func probeManifest(ctx context.Context, stderr io.Writer, m *results.Manifest, f probeFlags, cfg probe.Config, info probe.Info) {
	m.Settings = map[string]string{
		"endpoint": cfg.Endpoint, "producer": cfg.Producer, "connector": cfg.Connector,
		"model": info.Model, "tiers": strings.Join(cfg.Tiers, ","), "prefixes": f.prefixes,
		"reps": strconv.Itoa(cfg.Reps), "seed": strconv.FormatUint(cfg.Seed, 10),
		"timeout": cfg.Timeout.String(), "evict_margin": strconv.FormatFloat(cfg.EvictMargin, 'g', -1, 64),
		"block_size": strconv.Itoa(info.BlockSize), "block_size_source": info.BlockSource,
		"num_gpu_blocks": strconv.Itoa(info.GPUBlocks), "max_model_len": strconv.Itoa(info.MaxModelLen),
		"simulated": strconv.FormatBool(info.Simulated), "max_tokens": strconv.Itoa(probe.MaxTokens),
	}
	if f.useSim {
		m.Settings["sim_time_scale"] = strconv.FormatFloat(f.simScale, 'g', -1, 64)
	}
	if info.MetricsError != "" {
		m.Warnings = append(m.Warnings, "probe: /metrics at start: "+info.MetricsError)
		fmt.Fprintf(stderr, "kvtier probe: warning: %s: rows cannot be verified\n", info.MetricsError)
	}
	if m.Notes == nil {
		m.Notes = map[string]any{}
	}
	if d, err := clientOverhead(ctx); err != nil {
		m.Warnings = append(m.Warnings, "probe: client overhead not measured: "+err.Error())
	} else {
		m.Notes["client_overhead_ttft_p50_s"] = d.Seconds()
		fmt.Fprintf(stderr, "kvtier probe: client overhead (TTFT p50, 1k prompt, zero-cost sim): %.3g ms\n", 1e3*d.Seconds())
	}
}
