package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
)

// probeFlags are the raw flag values of kvtier probe.
type probeFlags struct {
	server                    serverFlags
	full                      bool // --full: the full grid with --sim
	producer, connector       string
	tiers, prefixes           string
	timeout                   time.Duration
	out                       outputFlags
	api, mooncakeShape        string
	cpuCapacity, offloadBlock string
	reps, blockSize           int
	bootstrapPort             int
	seed                      uint64
	evictMargin               float64
}

// config turns the flags into the probe's configuration, reporting every
// problem at once.
func (f *probeFlags) config() (probe.Config, error) {
	var errs []error
	cfg := probe.Config{
		Producer: strings.TrimSpace(f.producer), Connector: f.connector, BootstrapPort: f.bootstrapPort, Model: f.server.model,
		Reps: f.reps, Seed: f.seed, EvictMargin: f.evictMargin, BlockSize: f.blockSize,
		API: f.api, MooncakeShape: f.mooncakeShape,
	}
	cfg.CPUCapacity = tokensFlag(&errs, "cpu-capacity", f.cpuCapacity)
	cfg.OffloadBlock = tokensFlag(&errs, "offload-block", f.offloadBlock)
	cfg.Endpoint = f.server.endpointURL(&errs, secondEndpoint{flag: "producer", role: "producer", url: cfg.Producer})
	// Connector names are the library's to check (Validate); tiers go
	// by the probe's or the sweep's names.
	cfg.Tiers = listFlag(&errs, "tiers", f.tiers, func(s string) (string, error) { return probeTier(strings.TrimSpace(s)) }, "miss")
	shortGrid(f.server.fs, f.server.useSim, f.full, "prefix", &f.prefixes, "1k,4k,16k")
	cfg.Prefixes = listFlag(&errs, "prefix", f.prefixes, units.ParseTokens, 1024)
	cfg.Timeout = f.timeout
	cfg.Idle, cfg.MaxTimeouts = f.server.idle, f.server.maxTimeouts
	// The flag takes a port; the library's 0 (Mooncake's default) is
	// the flag's default already. Reported here once, not again below.
	if err := option.Range("bootstrap-port", f.bootstrapPort, 1, 65535); err != nil {
		errs = append(errs, err)
		cfg.BootstrapPort = 0
	}
	if err := checkSimTimeScale(f.server.simScale); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, f.out.check())
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

// tokensFlag parses an optional token count ("" or "0": none, "400k");
// a value that does not parse adds an option.Error to errs.
func tokensFlag(errs *[]error, name, value string) int {
	if strings.TrimSpace(value) == "" {
		return 0
	}
	n, err := units.ParseTokens(value)
	if err != nil {
		*errs = append(*errs, option.Wrap(name, err))
		return 0
	}
	return n
}

// addSimTimeScale adds --sim-time-scale, removed: a simulator run faster
// than real time cannot give back real-time figures (its own processing
// time, which does not scale, is folded into what it models). Given 1, it
// is accepted with a deprecation warning (warnSimTimeScale); any other
// value is bad input (checkSimTimeScale). It is hidden from the usage.
func addSimTimeScale(fs *pflag.FlagSet, v *float64) {
	fs.Float64Var(v, "sim-time-scale", 1, "removed: the embedded sim runs in real time")
	fs.MarkHidden("sim-time-scale")
}

// warnSimTimeScale says on stderr that --sim-time-scale 1 is deprecated.
func warnSimTimeScale(fs *pflag.FlagSet, v float64, stderr io.Writer) {
	if fs.Changed("sim-time-scale") && v == 1 {
		fmt.Fprintf(stderr, "kvtier %s: warning: --sim-time-scale is deprecated and will go: the embedded sim always runs in real time (kvtier sim --time-scale still scales a standalone server)\n", fs.Name())
	}
}

// checkSimTimeScale rejects --sim-time-scale other than 1.
func checkSimTimeScale(v float64) error {
	if v == 1 {
		return nil
	}
	return option.Errorf("sim-time-scale", "%g: removed; a scaled simulator cannot give real-time figures back (its own processing time does not scale), so the embedded sim runs in real time: drop the flag (kvtier sim --time-scale still scales a standalone server)", v)
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
	c, err := serving.NewClient(url, 30*time.Second)
	if err != nil {
		return 0, err
	}
	return probe.Overhead(ctx, c, s.Config().Model, 1024, overheadReps, 1)
}

// startProbeSims starts a consumer sim with CPU offload and, when remote
// is wanted, a producer it pulls from. The GPU pool holds twice the
// longest prefix, so forcing the cpu tier evicts little.
func startProbeSims(ctx context.Context, cfg *probe.Config) (func(), error) {
	base := probeSimConfig(*cfg)
	var sims simFleet
	consumer := base
	consumer.CPUBlocks = 4 * base.GPUBlocks
	if slices.Contains(cfg.Tiers, "remote") {
		producer := base
		producer.Role = "producer"
		url, err := sims.start(ctx, producer)
		if err != nil {
			sims.close()
			return nil, err
		}
		cfg.Producer = url
		consumer.Role, consumer.KVPeer = "consumer", url
		// The sim's Mooncake bootstrap server is its API port.
		if u, err := neturl.Parse(url); err == nil {
			cfg.BootstrapPort, _ = strconv.Atoi(u.Port())
		}
	}
	url, err := sims.start(ctx, consumer)
	if err != nil {
		sims.close()
		return nil, err
	}
	cfg.Endpoint = url
	cfg.Simulated = true
	return sims.close, nil
}

// probeSimConfig is the configuration of the simulated servers --sim
// starts for a probe of cfg.
func probeSimConfig(cfg probe.Config) vllmsim.Config {
	longest := slices.Max(cfg.Prefixes)
	bs := cfg.BlockSize
	if bs == 0 {
		bs = vllmsim.DefaultBlockSize
	}
	return vllmsim.Config{
		Model: cfg.Model, BlockSize: bs, GPUBlocks: max(2*longest/bs+64, 1024),
		MaxModelLen: max(vllmsim.DefaultMaxModelLen, longest+1024), TimeScale: 1,
		EnablePromptTokensDetails: true, Seed: int64(cfg.Seed),
	}
}

// runProbe measures the TTFT of a reused prefix in each tier of a vLLM
// server (or an embedded sim) and writes probe.csv.
func runProbe(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("probe", "Usage: kvtier probe --base-url URL | --sim [flags]\n\nMeasures the time to first token of a prompt whose prefix the server holds nowhere\n(miss), in GPU memory, in CPU memory (offload) or on a producer instance (remote),\nchecking each against the server's /metrics. Writes probe.csv, probe_summary.csv\nand manifest.json.", stderr)
	var f probeFlags
	f.server.add(fs, "measure an embedded kvtier sim instead of a server (rows say simulated=true)")
	fs.StringVar(&f.tiers, "tiers", strings.Join(probe.Tiers, ","), "tiers to force and measure: "+probeTierUsage()+"; the other names in parentheses are accepted too")
	fs.StringVar(&f.prefixes, "prefix", "1k,2k,4k,8k,16k,32k,64k", "prompt lengths in tokens (k = 1024; with --sim 1k,4k,16k unless --full)")
	addFull(fs, &f.full, "--prefix 1k,2k,4k,8k,16k,32k,64k")
	fs.IntVar(&f.reps, "reps", DefaultReps, "measured requests per tier and prefix")
	f.out.add(fs)
	f.timeout = 120 * time.Second
	fs.Var(durationValue{&f.timeout}, "timeout", "limit of one request")
	fs.StringVar(&f.producer, "producer", "", "remote tier: base URL of the instance that prefills (kv_producer); the --base-url server pulls from it")
	fs.StringVar(&f.connector, "connector", "nixl", "remote tier: KV connector protocol, nixl or mooncake")
	fs.IntVar(&f.bootstrapPort, "bootstrap-port", 8998, "remote tier, mooncake: the producer's bootstrap port")
	fs.StringVar(&f.mooncakeShape, "mooncake-shape", probe.MooncakeAuto, "remote tier, mooncake: request shape of the proxy, "+strings.Join(probe.MooncakeShapes, ", ")+" (auto: transfer when the bootstrap server answers GET /query, else bootstrap)")
	fs.StringVar(&f.api, "api", serving.APICompletions, "API of the requests: completions (prompts of token ids) or chat (one user message, sized with POST /tokenize)")
	fs.StringVar(&f.cpuCapacity, "cpu-capacity", "", "cpu tier: tokens the server's CPU offload store holds (default: from vllm:cache_config_info or GET /server_info; unknown otherwise)")
	fs.StringVar(&f.offloadBlock, "offload-block", "", "cpu tier: tokens per offload unit, when larger than the KV block (OffloadingConnector block_size, LMCache chunk; default: from GET /server_info, else the block)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the prompts' token ids")
	fs.Float64Var(&f.evictMargin, "evict-margin", 1.5, "cpu tier: filler tokens sent to evict the GPU cache, as a multiple of the GPU pool")
	fs.IntVar(&f.blockSize, "block-size", 0, "KV block size in tokens (default: from vllm:cache_config_info)")
	cfg, code, ok := parseOptions(fs, args, stderr, f.config)
	if !ok {
		return code
	}
	warnSimTimeScale(fs, f.server.simScale, stderr)
	if f.server.useSim {
		sayEstimate(stderr, "probe", f.full, len(cfg.Prefixes)*len(cfg.Tiers), cfg.Reps, probeSimEstimate(cfg, probeSimConfig(cfg)))
		stop, err := startProbeSims(ctx, &cfg)
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
			fmt.Fprintf(stderr, "kvtier probe: %s at %s (block size %d, %s)\n", info.Model, redact.URL(cfg.Endpoint), info.BlockSize, info.BlockSource)
			ts := &ttftSink{Sink: sink}
			err = p.Run(ctx, ts)
			ts.summary(stderr, map[bool]string{true: "simulated", false: "measured"}[cfg.Simulated])
			return err
		}}.exec(ctx, stdout, stderr)
}

// probeServerSettings records what the probe learnt of the server: its
// version and counters, the CPU store, the Mooncake shape; a figure the
// server does not expose is a warning.
func probeServerSettings(stderr io.Writer, m *results.Manifest, cfg probe.Config, info probe.Info) {
	m.Settings["api"] = cfg.API
	m.Settings["server_version"] = info.Version
	m.Settings["server_family"] = info.Family.String()
	m.Settings["counter_generation"] = info.Generation.String()
	warn := func(msg string) {
		m.Warnings = append(m.Warnings, "probe: "+msg)
		fmt.Fprintf(stderr, "kvtier probe: warning: %s\n", msg)
	}
	if info.VersionError != "" {
		warn(info.VersionError + ": counters read as of an unknown vLLM release")
	}
	if slices.Contains(cfg.Tiers, "cpu") {
		m.Settings["cpu_capacity_tokens"] = strconv.Itoa(info.Offload.Tokens)
		m.Settings["cpu_capacity_source"] = info.Offload.TokensSource
		m.Settings["offload_grain_tokens"] = strconv.Itoa(info.Offload.Grain)
		m.Settings["offload_grain_source"] = info.Offload.GrainSource
		if info.Offload.Tokens == 0 {
			warn("CPU store size " + info.Offload.TokensSource + ": the eviction flood may evict the warmed prefix from CPU memory too (give --cpu-capacity)")
		}
	}
	if info.MooncakeShape != "" {
		m.Settings["mooncake_shape"] = info.MooncakeShape
		m.Settings["mooncake_shape_source"] = info.MooncakeSource
	}
}

// probeManifest records the probe's settings, the client's own overhead
// and what /metrics said at start in m.
func probeManifest(ctx context.Context, stderr io.Writer, m *results.Manifest, f probeFlags, cfg probe.Config, info probe.Info) {
	m.Settings = map[string]string{
		"endpoint": redact.URL(cfg.Endpoint), "producer": redact.URL(cfg.Producer), "connector": cfg.Connector,
		"model": info.Model, "tiers": strings.Join(cfg.Tiers, ","), "prefixes": f.prefixes,
		"reps": strconv.Itoa(cfg.Reps), "seed": strconv.FormatUint(cfg.Seed, 10),
		"timeout": cfg.Timeout.String(), "idle_timeout": cfg.Idle.String(), "evict_margin": strconv.FormatFloat(cfg.EvictMargin, 'g', -1, 64),
		"block_size": strconv.Itoa(info.BlockSize), "block_size_source": info.BlockSource,
		"num_gpu_blocks": strconv.Itoa(info.GPUBlocks), "max_model_len": strconv.Itoa(info.MaxModelLen),
		"simulated": strconv.FormatBool(info.Simulated), "max_tokens": strconv.Itoa(probe.MaxTokens),
	}
	probeServerSettings(stderr, m, cfg, info)
	if info.MetricsError != "" {
		m.Warnings = append(m.Warnings, "probe: /metrics at start: "+info.MetricsError)
		fmt.Fprintf(stderr, "kvtier probe: warning: %s: only what the responses report of their cache (cached_tokens, llama.cpp cache_n) can verify rows\n", info.MetricsError)
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
