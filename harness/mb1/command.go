package mb1

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/serving/servingflag"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
)

// Command is kvtier interfere.
var Command = cli.Register(&cli.Command{Name: "interfere", Order: 90, Run: cli.Bound(runCommand),
	Summary:   "MB1: decode stall caused by a prefill on the same server",
	Usage:     "Usage: kvtier interfere --base-url URL | --sim [flags]\n\nMB1: runs D streaming decodes, injects one prefill of P tokens into the same server\n(and into --control-base-url for the control arm), and measures how decode stalls.\nWrites mb1.csv (one row per cell, arm and rep), mb1_tokens.csv (every token's arrival)\nand manifest.json.",
	ScriptEnv: []cli.EnvFlag{{Env: "KVTIER_PRODUCER", Flag: "--producer"}}})

// flags are the flags of kvtier interfere.
type flags struct {
	server                   servingflag.ServerFlags
	control, decode, prefill string
	chunkLabel               string
	injectAfter, timeout     time.Duration
	out                      cli.OutputFlags
	api                      string
	reps, decodeTokens       int
	seed                     uint64
	full                     bool // --full: the full grid with --sim
}

// simConfig is the configuration of the simulated servers --sim starts
// for MB1 of cfg, chunk its chunked-prefill size.
func simConfig(cfg Config, chunk int) vllmsim.Config {
	longest := slices.Max(cfg.Prefill)
	return vllmsim.Config{
		Model: cfg.Model, MaxModelLen: max(vllmsim.DefaultMaxModelLen, longest+1024),
		GPUBlocks: max(vllmsim.DefaultGPUBlocks, 2*longest/vllmsim.DefaultBlockSize), MaxNumBatchedTokens: chunk,
		TimeScale: 1, Seed: int64(cfg.Seed),
	}
}

// simEstimate is the time MB1 of cfg takes against simulated
// servers of sim: the sum of simWeights. Only --sim has a full grid: its
// servers are simulators, the second one for the control arm.
func simEstimate(cfg Config, sim vllmsim.Config) time.Duration {
	var sec float64
	for _, w := range simWeights(cfg, sim) {
		sec += w
	}
	return time.Duration(sec * float64(time.Second))
}

// simWeights are the estimated seconds of each cell of MB1 of cfg, in
// the order Run measures them, against simulated servers of sim: per
// rep, each arm's decodes run for the inject delay and then as long as
// the prefill of P tokens beside D decodes takes. Against a real server
// the progress's ETA weighs its cells by them too: the simulator's
// model of the H20 reference says how the cells' costs compare.
func simWeights(cfg Config, sim vllmsim.Config) []float64 {
	const arms = 3 // interfere, control (on the second simulator) and baseline
	var out []float64
	for _, p := range cfg.Prefill {
		for _, d := range cfg.Decode {
			arm := cfg.InjectAfter.Seconds() + vllmsim.EstimateTTFT(sim, "miss", p, d)
			out = append(out, arms*arm*float64(cfg.Reps))
		}
	}
	return out
}

// Bind adds the flags to fs.
func (f *flags) Bind(fs *pflag.FlagSet, c *cli.Call) {
	f.server.Add(fs, c, "measure an embedded kvtier sim, with a second one for the control arm (rows say simulated=true)")
	fs.StringVar(&f.decode, "decode", "1,4,8", "numbers of concurrent decode streams D (with --sim 1,8 unless --full)")
	fs.StringVar(&f.api, "api", serving.APICompletions, "API of the decode streams and the prefill: completions (prompts of token ids) or chat (as the H20 reference; the prefill sized with POST /tokenize)")
	fs.StringVar(&f.prefill, "prefill", "2k,8k,32k,64k,128k", "prefill lengths P in tokens (k = 1024; with --sim 8k unless --full)")
	servingflag.AddFull(fs, &f.full, "--decode 1,4,8 --prefill 2k,8k,32k,64k,128k")
	fs.IntVar(&f.reps, "reps", cli.DefaultReps, "reps per (D, P) cell")
	fs.StringVar(&f.control, "control-base-url", "", "base URL of a second instance: the control arm sends the prefill there (no control arm without it)")
	cli.Alias(fs, "control-endpoint", "control-base-url")
	fs.StringVar(&f.chunkLabel, "chunk-label", "", "the server's chunked-prefill size (max_num_batched_tokens), recorded in the rows; with --sim it sets the sim's")
	f.injectAfter, f.timeout = time.Second, 600*time.Second
	fs.Var(cli.DurationValue{D: &f.injectAfter}, "inject-after", "delay from the start of the decodes to the prefill")
	fs.IntVar(&f.decodeTokens, "decode-tokens", 0, "max_tokens of the decode streams (0: up to max_model_len; streams are cancelled once the prefill is done)")
	fs.Var(cli.DurationValue{D: &f.timeout}, "timeout", "limit of the prefill request")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the prompts' token ids")
	f.out.Add(fs)
}

// Resolve turns the flags into MB1's configuration, reporting every
// problem at once.
func (f *flags) Resolve() (Config, error) {
	var errs []error
	cfg := Config{
		ControlEndpoint: strings.TrimSpace(f.control), Model: f.server.Model, API: f.api,
		Reps: f.reps, ChunkLabel: f.chunkLabel, DecodeTokens: f.decodeTokens, Seed: f.seed,
	}
	cfg.Simulated = f.server.UseSim // the sim runs, and its URL is known, once the flags are checked
	cfg.Endpoint = f.server.EndpointURL(&errs, servingflag.SecondEndpoint{Flag: "control-base-url", Role: "control instance", URL: cfg.ControlEndpoint})
	servingflag.ShortGrid(f.server.FS, f.server.UseSim, f.full, "decode", &f.decode, "1,8")
	cfg.Decode = cli.ListFlag(&errs, "decode", f.decode, func(s string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return 0, fmt.Errorf("%q is not a number of streams", s)
		}
		return n, nil
	}, 1)
	servingflag.ShortGrid(f.server.FS, f.server.UseSim, f.full, "prefill", &f.prefill, "8k")
	cfg.Prefill = cli.ListFlag(&errs, "prefill", f.prefill, units.ParseTokens, 2048)
	if f.chunkLabel != "" {
		if n, err := units.ParseTokens(f.chunkLabel); err != nil || n > serving.MaxPromptTokens {
			errs = append(errs, option.Errorf("chunk-label", "want the server's chunked-prefill size in tokens, 1 to %d, got %q", serving.MaxPromptTokens, f.chunkLabel))
		}
	}
	cfg.InjectAfter, cfg.Timeout = f.injectAfter, f.timeout
	cfg.Idle, cfg.MaxTimeouts = f.server.Idle, f.server.MaxTimeouts
	cfg.ServerLog = servingflag.OpenServerLog(&errs, f.server.LogPath, f.server.UseSim)
	errs = append(errs, f.out.Check())
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

// startSims starts the measured sim and the control arm's sim,
// with chunked prefill of chunk tokens per step.
func startSims(ctx context.Context, cfg *Config, chunk int) (func(), error) {
	base := simConfig(*cfg, chunk)
	var sims vllmsim.Fleet
	var urls []string
	for range 2 {
		url, err := sims.Start(ctx, base)
		if err != nil {
			sims.Close()
			return nil, err
		}
		urls = append(urls, url)
	}
	cfg.Endpoint, cfg.ControlEndpoint, cfg.Simulated = urls[0], urls[1], true
	return sims.Close, nil
}

// runCommand runs MB1: decode streams, a prefill injected into them,
// and per-token times, into mb1.csv and mb1_tokens.csv.
func runCommand(ctx context.Context, c *cli.Call, f *flags, cfg Config) int {
	f.server.WarnSimTimeScale(c.Stderr)
	chunk := vllmsim.DefaultMaxBatched
	if f.chunkLabel != "" {
		chunk, _ = units.ParseTokens(f.chunkLabel)
	}
	cfg.Weights = simWeights(cfg, simConfig(cfg, chunk))
	if f.server.UseSim {
		cfg.ChunkLabel = strconv.Itoa(chunk)
		servingflag.SayEstimate(c.Stderr, c.Name, f.full, len(cfg.Prefill)*len(cfg.Decode), cfg.Reps, simEstimate(cfg, simConfig(cfg, chunk)))
		stop, err := startSims(ctx, &cfg, chunk)
		if err != nil {
			return c.UsageErr(fmt.Errorf("--sim: %w", err))
		}
		defer stop()
	}
	cfg.Log = c.Stderr
	r, err := New(ctx, cfg)
	if err != nil {
		return c.UsageErr(err)
	}
	return cli.SuiteRun{Call: c, Suite: Suite, Out: f.out,
		Run: func(ctx context.Context, out *harness.Output) error {
			out.Manifest.Settings = map[string]string{
				"endpoint": redact.URL(cfg.Endpoint), "control_endpoint": redact.URL(cfg.ControlEndpoint), "model": r.Model(),
				"decode": f.decode, "prefill": f.prefill, "reps": strconv.Itoa(cfg.Reps),
				"chunk_label": cfg.ChunkLabel, "inject_after": cfg.InjectAfter.String(),
				"decode_tokens": strconv.Itoa(cfg.DecodeTokens), "timeout": cfg.Timeout.String(), "idle_timeout": cfg.Idle.String(),
				"seed": strconv.FormatUint(cfg.Seed, 10), "simulated": strconv.FormatBool(r.Simulated()),
				"api": cfg.API, "server_version": r.Version(), "server_family": r.Family().String(),
			}
			sinks, err := out.OpenAll(Suite.Files)
			if err != nil {
				return err
			}
			c.Logf("%s at %s", r.Model(), redact.URL(cfg.Endpoint))
			ps := &penaltySink{Sink: sinks[0]}
			err = r.Run(ctx, ps, sinks[1])
			ps.summary(c.Stderr, map[bool]string{true: "simulated", false: "measured"}[r.Simulated()])
			return err
		}}.Exec(ctx)
}
