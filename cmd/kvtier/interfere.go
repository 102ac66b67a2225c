package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/harness/mb1"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
)

// interfereFlags are the raw flag values of kvtier interfere.
type interfereFlags struct {
	server                   serverFlags
	control, decode, prefill string
	chunkLabel               string
	injectAfter, timeout     time.Duration
	out                      outputFlags
	api                      string
	reps, decodeTokens       int
	seed                     uint64
	full                     bool // --full: the full grid with --sim
}

// config turns the flags into MB1's configuration, reporting every
// problem at once.
func (f *interfereFlags) config() (mb1.Config, error) {
	var errs []error
	cfg := mb1.Config{
		ControlEndpoint: strings.TrimSpace(f.control), Model: f.server.model, API: f.api,
		Reps: f.reps, ChunkLabel: f.chunkLabel, DecodeTokens: f.decodeTokens, Seed: f.seed,
	}
	if err := checkSimTimeScale(f.server.simScale); err != nil {
		errs = append(errs, err)
	}
	cfg.Endpoint = f.server.endpointURL(&errs, secondEndpoint{flag: "control-base-url", role: "control instance", url: cfg.ControlEndpoint})
	shortGrid(f.server.fs, f.server.useSim, f.full, "decode", &f.decode, "1,8")
	cfg.Decode = listFlag(&errs, "decode", f.decode, func(s string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return 0, fmt.Errorf("%q is not a number of streams", s)
		}
		return n, nil
	}, 1)
	shortGrid(f.server.fs, f.server.useSim, f.full, "prefill", &f.prefill, "8k")
	cfg.Prefill = listFlag(&errs, "prefill", f.prefill, units.ParseTokens, 2048)
	if f.chunkLabel != "" {
		if n, err := units.ParseTokens(f.chunkLabel); err != nil || n > serving.MaxPromptTokens {
			errs = append(errs, option.Errorf("chunk-label", "want the server's chunked-prefill size in tokens, 1 to %d, got %q", serving.MaxPromptTokens, f.chunkLabel))
		}
	}
	cfg.InjectAfter, cfg.Timeout = f.injectAfter, f.timeout
	cfg.Idle, cfg.MaxTimeouts = f.server.idle, f.server.maxTimeouts
	errs = append(errs, f.out.check())
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

// startInterfereSims starts the measured sim and the control arm's sim,
// with chunked prefill of chunk tokens per step.
func startInterfereSims(ctx context.Context, cfg *mb1.Config, chunk int) (func(), error) {
	base := interfereSimConfig(*cfg, chunk)
	var sims simFleet
	var urls []string
	for range 2 {
		url, err := sims.start(ctx, base)
		if err != nil {
			sims.close()
			return nil, err
		}
		urls = append(urls, url)
	}
	cfg.Endpoint, cfg.ControlEndpoint, cfg.Simulated = urls[0], urls[1], true
	return sims.close, nil
}

// interfereSimConfig is the configuration of the simulated servers
// --sim starts for MB1 of cfg, chunk its chunked-prefill size.
func interfereSimConfig(cfg mb1.Config, chunk int) vllmsim.Config {
	longest := slices.Max(cfg.Prefill)
	return vllmsim.Config{
		Model: cfg.Model, MaxModelLen: max(vllmsim.DefaultMaxModelLen, longest+1024),
		GPUBlocks: max(vllmsim.DefaultGPUBlocks, 2*longest/vllmsim.DefaultBlockSize), MaxNumBatchedTokens: chunk,
		TimeScale: 1, Seed: int64(cfg.Seed),
	}
}

// add adds the flags of kvtier interfere.
func (f *interfereFlags) add(fs *pflag.FlagSet) {
	f.server.add(fs, "measure an embedded kvtier sim, with a second one for the control arm (rows say simulated=true)")
	fs.StringVar(&f.decode, "decode", "1,4,8", "numbers of concurrent decode streams D (with --sim 1,8 unless --full)")
	fs.StringVar(&f.api, "api", serving.APICompletions, "API of the decode streams and the prefill: completions (prompts of token ids) or chat (as the H20 reference; the prefill sized with POST /tokenize)")
	fs.StringVar(&f.prefill, "prefill", "2k,8k,32k,64k,128k", "prefill lengths P in tokens (k = 1024; with --sim 8k unless --full)")
	addFull(fs, &f.full, "--decode 1,4,8 --prefill 2k,8k,32k,64k,128k")
	fs.IntVar(&f.reps, "reps", DefaultReps, "reps per (D, P) cell")
	fs.StringVar(&f.control, "control-base-url", "", "base URL of a second instance: the control arm sends the prefill there (no control arm without it)")
	alias(fs, "control-endpoint", "control-base-url")
	fs.StringVar(&f.chunkLabel, "chunk-label", "", "the server's chunked-prefill size (max_num_batched_tokens), recorded in the rows; with --sim it sets the sim's")
	f.injectAfter, f.timeout = time.Second, 600*time.Second
	fs.Var(durationValue{&f.injectAfter}, "inject-after", "delay from the start of the decodes to the prefill")
	fs.IntVar(&f.decodeTokens, "decode-tokens", 0, "max_tokens of the decode streams (0: up to max_model_len; streams are cancelled once the prefill is done)")
	fs.Var(durationValue{&f.timeout}, "timeout", "limit of the prefill request")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the prompts' token ids")
	f.out.add(fs)
}

// runInterfere runs MB1: decode streams, a prefill injected into them,
// and per-token times, into mb1.csv and mb1_tokens.csv.
func runInterfere(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("interfere", "Usage: kvtier interfere --base-url URL | --sim [flags]\n\nMB1: runs D streaming decodes, injects one prefill of P tokens into the same server\n(and into --control-base-url for the control arm), and measures how decode stalls.\nWrites mb1.csv (one row per cell, arm and rep), mb1_tokens.csv (every token's arrival)\nand manifest.json.", stderr)
	var f interfereFlags
	f.add(fs)
	cfg, code, ok := parseOptions(fs, args, stderr, f.config)
	if !ok {
		return code
	}
	warnSimTimeScale(fs, f.server.simScale, stderr)
	if f.server.useSim {
		chunk := vllmsim.DefaultMaxBatched
		if f.chunkLabel != "" {
			chunk, _ = units.ParseTokens(f.chunkLabel)
		}
		cfg.ChunkLabel = strconv.Itoa(chunk)
		sayEstimate(stderr, "interfere", f.full, len(cfg.Prefill)*len(cfg.Decode), cfg.Reps, interfereSimEstimate(cfg, interfereSimConfig(cfg, chunk)))
		stop, err := startInterfereSims(ctx, &cfg, chunk)
		if err != nil {
			return usageErr(stderr, "interfere", fmt.Errorf("--sim: %w", err))
		}
		defer stop()
	}
	cfg.Log = stderr
	r, err := mb1.New(ctx, cfg)
	if err != nil {
		return usageErr(stderr, "interfere", err)
	}
	return suiteRun{cmd: "interfere", suite: mb1.Suite, out: f.out, args: args,
		run: func(ctx context.Context, out *harness.Output) error {
			out.Manifest.Settings = map[string]string{
				"endpoint": redact.URL(cfg.Endpoint), "control_endpoint": redact.URL(cfg.ControlEndpoint), "model": r.Model(),
				"decode": f.decode, "prefill": f.prefill, "reps": strconv.Itoa(cfg.Reps),
				"chunk_label": cfg.ChunkLabel, "inject_after": cfg.InjectAfter.String(),
				"decode_tokens": strconv.Itoa(cfg.DecodeTokens), "timeout": cfg.Timeout.String(), "idle_timeout": cfg.Idle.String(),
				"seed": strconv.FormatUint(cfg.Seed, 10), "simulated": strconv.FormatBool(r.Simulated()),
				"api": cfg.API, "server_version": r.Version(), "server_family": r.Family().String(),
			}
			sinks, err := out.OpenAll(mb1.Suite.Files)
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "kvtier interfere: %s at %s\n", r.Model(), redact.URL(cfg.Endpoint))
			ps := &penaltySink{Sink: sinks[0]}
			err = r.Run(ctx, ps, sinks[1])
			ps.summary(stderr, map[bool]string{true: "simulated", false: "measured"}[r.Simulated()])
			return err
		}}.exec(ctx, stdout, stderr)
}
