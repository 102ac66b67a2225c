package probe

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

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/serving/servingflag"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
)

// Command is kvtier probe.
var Command = cli.Register(&cli.Command{Name: "probe", Order: 80, Run: cli.Bound(runCommand),
	Summary:   "four-tier TTFT of a reused prefix against a vLLM server",
	Usage:     "Usage: kvtier probe --base-url URL | --sim [flags]\n\nMeasures the time to first token of a prompt whose prefix the server holds nowhere\n(miss), in GPU memory, in CPU memory (offload) or on a producer instance (remote),\nchecking each against the server's /metrics. Writes probe.csv, probe_summary.csv\nand manifest.json.",
	ScriptEnv: []cli.EnvFlag{{Env: "KVTIER_PRODUCER", Flag: "--producer"}}})

// flags are the flags of kvtier probe.
type flags struct {
	server                    servingflag.ServerFlags
	full                      bool // --full: the full grid with --sim
	producer, connector       string
	tiers, prefixes           string
	timeout                   time.Duration
	out                       cli.OutputFlags
	api, mooncakeShape        string
	cpuCapacity, offloadBlock string
	reps, blockSize           int
	bootstrapPort             int
	seed                      uint64
	evictMargin               float64
}

// Bind adds the flags to fs.
func (f *flags) Bind(fs *pflag.FlagSet, c *cli.Call) {
	f.server.Add(fs, c, "measure an embedded kvtier sim instead of a server (rows say simulated=true)")
	fs.StringVar(&f.tiers, "tiers", strings.Join(Tiers, ","), "tiers to force and measure: "+tierUsage()+"; the other names in parentheses are accepted too")
	fs.StringVar(&f.prefixes, "prefix", "1k,2k,4k,8k,16k,32k,64k", "prompt lengths in tokens (k = 1024; with --sim 1k,4k,16k unless --full)")
	servingflag.AddFull(fs, &f.full, "--prefix 1k,2k,4k,8k,16k,32k,64k")
	fs.IntVar(&f.reps, "reps", cli.DefaultReps, "measured requests per tier and prefix")
	f.out.Add(fs)
	f.timeout = 120 * time.Second
	fs.Var(cli.DurationValue{D: &f.timeout}, "timeout", "limit of one request")
	fs.StringVar(&f.producer, "producer", "", "remote tier: base URL of the instance that prefills (kv_producer); the --base-url server pulls from it")
	fs.StringVar(&f.connector, "connector", "nixl", "remote tier: KV connector protocol, nixl or mooncake")
	fs.IntVar(&f.bootstrapPort, "bootstrap-port", 8998, "remote tier, mooncake: the producer's bootstrap port")
	fs.StringVar(&f.mooncakeShape, "mooncake-shape", MooncakeAuto, "remote tier, mooncake: request shape of the proxy, "+strings.Join(MooncakeShapes, ", ")+" (auto: transfer when the bootstrap server answers GET /query, else bootstrap)")
	fs.StringVar(&f.api, "api", serving.APICompletions, "API of the requests: completions (prompts of token ids) or chat (one user message, sized with POST /tokenize)")
	fs.StringVar(&f.cpuCapacity, "cpu-capacity", "", "cpu tier: tokens the server's CPU offload store holds (default: from vllm:cache_config_info or GET /server_info; unknown otherwise)")
	fs.StringVar(&f.offloadBlock, "offload-block", "", "cpu tier: tokens per offload unit, when larger than the KV block (OffloadingConnector block_size, LMCache chunk; default: from GET /server_info, else the block)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the prompts' token ids")
	fs.Float64Var(&f.evictMargin, "evict-margin", 1.5, "cpu tier: filler tokens sent to evict the GPU cache, as a multiple of the GPU pool")
	fs.IntVar(&f.blockSize, "block-size", 0, "KV block size in tokens (default: from vllm:cache_config_info)")
}

// Resolve turns the flags into the probe's configuration, reporting
// every problem at once.
func (f *flags) Resolve() (Config, error) {
	var errs []error
	cfg := Config{
		Producer: strings.TrimSpace(f.producer), Connector: f.connector, BootstrapPort: f.bootstrapPort, Model: f.server.Model,
		Reps: f.reps, Seed: f.seed, EvictMargin: f.evictMargin, BlockSize: f.blockSize,
		API: f.api, MooncakeShape: f.mooncakeShape,
	}
	cfg.CPUCapacity = cli.TokensFlag(&errs, "cpu-capacity", f.cpuCapacity)
	cfg.OffloadBlock = cli.TokensFlag(&errs, "offload-block", f.offloadBlock)
	cfg.Simulated = f.server.UseSim // the sim runs, and its URL is known, once the flags are checked
	cfg.Endpoint = f.server.EndpointURL(&errs, servingflag.SecondEndpoint{Flag: "producer", Role: "producer", URL: cfg.Producer})
	// Connector names are Validate's to check; tiers go by any of their
	// names.
	cfg.Tiers = cli.ListFlag(&errs, "tiers", f.tiers, func(s string) (string, error) { return tierName(strings.TrimSpace(s)) }, tierMiss)
	servingflag.ShortGrid(f.server.FS, f.server.UseSim, f.full, "prefix", &f.prefixes, "1k,4k,16k")
	cfg.Prefixes = cli.ListFlag(&errs, "prefix", f.prefixes, units.ParseTokens, 1024)
	cfg.Timeout = f.timeout
	cfg.Idle, cfg.MaxTimeouts = f.server.Idle, f.server.MaxTimeouts
	cfg.ServerLog = servingflag.OpenServerLog(&errs, f.server.LogPath, f.server.UseSim)
	// The flag takes a port; the library's 0 (Mooncake's default) is
	// the flag's default already. Reported here once, not again below.
	if err := option.Range("bootstrap-port", f.bootstrapPort, 1, 65535); err != nil {
		errs = append(errs, err)
		cfg.BootstrapPort = 0
	}
	errs = append(errs, f.out.Check())
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

// tierName returns the probe's name of the tier called name, any name
// the tier goes by (the sweep's hbm, host, recompute; dram), or an error
// naming the tiers the probe measures.
func tierName(name string) (string, error) {
	if d, ok := tierspec.Lookup(name); ok && d.Probe != "" {
		return d.Probe, nil
	}
	return "", fmt.Errorf("unknown tier %q (the probe measures %s)", name, tierUsage())
}

// tierUsage names the probe's tiers in the probe's order, each with its
// other names: "miss (recompute), gpu (hbm), ...".
func tierUsage() string {
	var out []string
	for _, p := range Tiers {
		d, _ := tierspec.Lookup(p)
		names := slices.DeleteFunc(d.Names(), func(n string) bool { return n == p })
		if len(names) == 0 {
			out = append(out, p)
			continue
		}
		out = append(out, p+" ("+strings.Join(names, ", ")+")")
	}
	return strings.Join(out, ", ")
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
	var sims vllmsim.Fleet
	defer sims.Close()
	url, err := sims.Start(ctx, vllmsim.Config{Profile: zero, TimeScale: 0})
	if err != nil {
		return 0, err
	}
	c, err := serving.NewClientWith(url, 30*time.Second, 0, vllmsim.ClientOf(ctx))
	if err != nil {
		return 0, err
	}
	return Overhead(ctx, c, sims[0].Config().Model, 1024, overheadReps, 1)
}

// startSims starts a consumer sim with CPU offload and, when remote
// is wanted, a producer it pulls from. The GPU pool holds twice the
// longest prefix, so forcing the cpu tier evicts little.
func startSims(ctx context.Context, cfg *Config) (func(), error) {
	base := simConfig(*cfg)
	var sims vllmsim.Fleet
	consumer := base
	consumer.CPUBlocks = 4 * base.GPUBlocks
	if slices.Contains(cfg.Tiers, tierRemote) {
		producer := base
		producer.Role = "producer"
		url, err := sims.Start(ctx, producer)
		if err != nil {
			sims.Close()
			return nil, err
		}
		cfg.Producer = url
		consumer.Role, consumer.KVPeer = "consumer", url
		// The sim's Mooncake bootstrap server is its API port.
		if u, err := neturl.Parse(url); err == nil {
			cfg.BootstrapPort, _ = strconv.Atoi(u.Port())
		}
	}
	url, err := sims.Start(ctx, consumer)
	if err != nil {
		sims.Close()
		return nil, err
	}
	cfg.Endpoint = url
	cfg.Simulated = true
	return sims.Close, nil
}

// simConfig is the configuration of the simulated servers --sim starts
// for a probe of cfg.
func simConfig(cfg Config) vllmsim.Config {
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

// serverModel is the simulator that models the server info describes
// (its block size and GPU pool, where it says them): a real server's
// configurations are weighed for the ETA by the H20 reference's model,
// whose costs compare as the server's do, and whose flood evicts the
// pool the server has.
func serverModel(cfg Config, info Info) vllmsim.Config {
	sim := simConfig(cfg)
	if info.BlockSize > 0 && info.GPUBlocks > 0 {
		sim.BlockSize, sim.GPUBlocks = info.BlockSize, info.GPUBlocks
	}
	return sim
}

// simEstimate is the time a probe of cfg takes against simulated
// servers of sim: per prefix, tier and rep, the requests it sends (the
// measured one, the warm-up that caches the prefix for gpu and cpu, the
// producer's prefill for remote, the eviction flood for cpu), each for
// the TTFT the simulator models.
func simEstimate(cfg Config, sim vllmsim.Config) time.Duration {
	var sec float64
	for _, w := range simWeights(cfg, sim) {
		sec += w
	}
	return time.Duration(sec * float64(time.Second))
}

// simWeights are the estimated seconds of each configuration (prefix,
// then tier, as the probe runs them) against sim: every rep's TTFT, the
// miss that puts a prefix in place for a hit, and for the cpu tier the
// flood that evicts it from the GPU. The progress's ETA weighs by them.
func simWeights(cfg Config, sim vllmsim.Config) []float64 {
	ttft := func(tier string, tokens int) float64 { return vllmsim.EstimateTTFT(sim, tier, tokens, 0) }
	// The flood: fillers of at most 8k tokens (half the pool at most)
	// totalling the GPU pool times the margin (probe.Prober.evict).
	pool := sim.GPUBlocks * sim.BlockSize
	filler := min(8192, pool/2)
	flood := float64((int(float64(pool)*cfg.EvictMargin)+filler-1)/filler) * ttft(tierMiss, filler)
	var out []float64
	for _, l := range cfg.Prefixes {
		for _, tier := range cfg.Tiers {
			t := ttft(tier, l)
			switch tier {
			case tierGPU, tierRemote:
				t += ttft(tierMiss, l)
			case tierCPU:
				t += ttft(tierMiss, l) + flood
			}
			out = append(out, t*float64(cfg.Reps))
		}
	}
	return out
}

// runCommand measures the TTFT of a reused prefix in each tier of a
// vLLM server (or an embedded sim) and writes probe.csv.
func runCommand(ctx context.Context, c *cli.Call, f *flags, cfg Config) int {
	f.server.WarnSimTimeScale(c.Stderr)
	if f.server.UseSim {
		servingflag.SayEstimate(c.Stderr, c.Name, f.full, len(cfg.Prefixes)*len(cfg.Tiers), cfg.Reps, simEstimate(cfg, simConfig(cfg)))
		cfg.Weights = simWeights(cfg, simConfig(cfg))
		cfg.HTTP = vllmsim.ClientOf(ctx)
		stop, err := startSims(ctx, &cfg)
		if err != nil {
			return c.UsageErr(fmt.Errorf("--sim: %w", err))
		}
		defer stop()
	}
	cfg.BlockBytes = kv.ServedBlockBytes
	cfg.Log = c.Stderr
	p, err := New(ctx, cfg)
	if err != nil {
		return c.UsageErr(err)
	}
	info := p.Info()
	if p.cfg.Weights == nil {
		p.cfg.Weights = simWeights(cfg, serverModel(cfg, info))
	}
	return cli.SuiteRun{Call: c, Suite: Suite, Out: f.out,
		Run: func(ctx context.Context, out *harness.Output) error {
			writeManifest(ctx, c.Stderr, out.Manifest, f, cfg, info)
			if err := out.WriteManifest(); err != nil {
				return err
			}
			sink, err := out.Open(Suite.Main())
			if err != nil {
				return err
			}
			c.Logf("%s at %s (block size %d, %s)", info.Model, redact.URL(cfg.Endpoint), info.BlockSize, info.BlockSource)
			ts := &ttftSink{Sink: sink}
			err = p.Run(ctx, ts)
			ts.summary(c.Stderr, map[bool]string{true: "simulated", false: "measured"}[info.Simulated])
			return err
		}}.Exec(ctx)
}

// serverSettings records what the probe learnt of the server: its
// version and counters, the CPU store, the Mooncake shape; a figure the
// server does not expose is a warning.
func serverSettings(stderr io.Writer, m *results.Manifest, cfg Config, info Info) {
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
	if slices.Contains(cfg.Tiers, tierCPU) {
		m.Settings["cpu_capacity_tokens"] = strconv.Itoa(info.Offload.Tokens)
		m.Settings["cpu_capacity_source"] = info.Offload.TokensSource
		m.Settings["offload_grain_tokens"] = strconv.Itoa(info.Offload.Grain)
		m.Settings["offload_grain_source"] = info.Offload.GrainSource
		switch why := info.Family.Traits().NoOffload; {
		case why != "":
			warn("the cpu tier's rows are skipped: " + why)
		case info.Offload.Tokens == 0:
			warn("CPU store size " + info.Offload.TokensSource + ": the eviction flood may evict the warmed prefix from CPU memory too (give --cpu-capacity)")
		}
	}
	if info.MooncakeShape != "" {
		m.Settings["mooncake_shape"] = info.MooncakeShape
		m.Settings["mooncake_shape_source"] = info.MooncakeSource
	}
}

// writeManifest records the probe's settings, the client's own overhead
// and what /metrics said at start in m.
func writeManifest(ctx context.Context, stderr io.Writer, m *results.Manifest, f *flags, cfg Config, info Info) {
	m.Settings = map[string]string{
		"endpoint": redact.URL(cfg.Endpoint), "producer": redact.URL(cfg.Producer), "connector": cfg.Connector,
		"model": info.Model, "tiers": strings.Join(cfg.Tiers, ","), "prefixes": f.prefixes,
		"reps": strconv.Itoa(cfg.Reps), "seed": strconv.FormatUint(cfg.Seed, 10),
		"timeout": cfg.Timeout.String(), "idle_timeout": cfg.Idle.String(), "evict_margin": strconv.FormatFloat(cfg.EvictMargin, 'g', -1, 64),
		"block_size": strconv.Itoa(info.BlockSize), "block_size_source": info.BlockSource,
		"num_gpu_blocks": strconv.Itoa(info.GPUBlocks), "max_model_len": strconv.Itoa(info.MaxModelLen),
		"simulated": strconv.FormatBool(info.Simulated), "max_tokens": strconv.Itoa(MaxTokens),
	}
	serverSettings(stderr, m, cfg, info)
	if info.MetricsError != "" {
		m.Warnings = append(m.Warnings, "probe: /metrics at start: "+info.MetricsError)
		fmt.Fprintf(stderr, "kvtier probe: warning: %s\n", noMetricsWarning(info, cfg.ServerLog != nil))
	}
	if m.Notes == nil {
		m.Notes = map[string]any{}
	}
	if d, err := clientOverhead(ctx); err != nil {
		m.Warnings = append(m.Warnings, "probe: client overhead not measured: "+err.Error())
	} else {
		m.Notes["client_overhead_ttft_p50_s"] = d.Seconds()
		fmt.Fprintf(stderr, "kvtier probe: client overhead (TTFT p50, 1k prompt, zero-cost sim): %s\n", units.FormatSeconds(d.Seconds()))
	}
}

// noMetricsWarning says what a server without readable /metrics leaves to
// verify rows by, in its family's words.
func noMetricsWarning(info Info, log bool) string {
	t := info.Family.Traits()
	switch {
	case t.Metrics != "":
		what := t.Cached
		if what == "" {
			what = serving.CachedFromUsage + ", llama.cpp's " + serving.CachedFromTimings
		}
		return info.MetricsError + ": only what the responses report of their cache (" + what + ") can verify rows"
	case log:
		return t.Title + " has no /metrics and reports no cached tokens: its log (--server-log) verifies rows"
	case t.CacheLog != "":
		return t.Title + " has no /metrics and reports no cached tokens: rows stay unverified unless it runs with " + t.CacheLog + " and --server-log names its log"
	}
	return t.Title + " has no /metrics and reports no cached tokens: rows stay unverified"
}
