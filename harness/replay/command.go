package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/replayer"
	"github.com/kvtier/kvtier/serving/servingflag"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/spf13/pflag"
)

// Command is kvtier replay.
var Command = cli.Register(&cli.Command{Name: "replay", Order: 120, Run: runCommand,
	Summary: "send a trace (or multi-turn sessions) to a server: realized vs predicted APC, TTFT",
	Usage: `Usage: kvtier replay --base-url URL | --sim [--trace FILE] [flags]

Sends a trace's requests (or synthetic closed-loop multi-turn sessions) to a vLLM server
as prompts of token ids that share exactly what the trace's hash ids share, and writes
replay.csv (per request: dispatch time, TTFT, TPOT, ITL p50/p90, E2E, tokens, cached
tokens, the LRU model's predicted hit at the server's capacity) and replay_run.csv (per
run: realized APC from /metrics deltas, external hits apart, predicted APC, TTFT
percentiles, goodput against --slo-ttft/--slo-tpot, failed and timed-out requests).`})

// runCommand replays a workload against a server.
func runCommand(ctx context.Context, c *cli.Call) int {
	fs := c.FlagSet()
	var f replayer.WorkloadFlags
	var out cli.OutputFlags
	var baseURL, serverLog string
	var blockSize, gpuBlocks int
	var sim bool
	f.Add(fs)
	out.Add(fs)
	servingflag.AddBaseURL(fs, c, &baseURL, "base URL of the vLLM server, e.g. http://127.0.0.1:8000 (env "+servingflag.EnvEndpoint+")")
	servingflag.ServerGroup.Bind(fs, func(fs *pflag.FlagSet) {
		fs.BoolVar(&sim, "sim", false, "replay against an embedded kvtier sim (profile h20, real time; rows say simulated=true) instead of --base-url")
	})
	fs.IntVar(&blockSize, "block-size", 0, "the server's KV block size in tokens (default: from vllm:cache_config_info)")
	fs.IntVar(&gpuBlocks, "gpu-blocks", 0, "the server's GPU KV blocks, for the prediction (default: vllm:cache_config_info num_gpu_blocks)")
	servingflag.AddServerLog(fs, &serverLog)
	r, code, ok := cli.ParseOptions(fs, c.Args, c.Stderr, c.Getenv, func() (replayRun, error) {
		var errs []error
		cfg, w := f.Config(ctx, fs, &errs)
		cfg.Suite, cfg.Endpoint, cfg.BlockSize, cfg.GPUBlocks, cfg.Log = Suite.Name, strings.TrimSpace(baseURL), blockSize, gpuBlocks, c.Stderr
		cfg.ServerLog = servingflag.OpenServerLog(&errs, serverLog, sim)
		stop := startSim(ctx, &errs, sim, fs, &cfg)
		errs = append(errs, out.Check(), cfg.Validate())
		cfg.BlockBytes = f.BlockBytes(&errs)
		if err := errors.Join(errs...); err != nil {
			stop()
			return replayRun{stop: stop}, err
		}
		rp, err := replayer.New(ctx, cfg, w)
		if err != nil {
			stop()
		}
		return replayRun{cfg, w, rp, stop}, err
	})
	if !ok {
		return code
	}
	defer r.stop()
	var dir string
	code = cli.SuiteRun{Call: c, Suite: Suite, Out: out,
		Run: func(ctx context.Context, o *harness.Output) error {
			dir = o.Dir
			return replayInto(ctx, c, o, &f, r)
		}}.Exec(ctx)
	return c.PrintSection(dir, code, writeReplay)
}

// replayRun is a validated kvtier replay, connected to its server.
type replayRun struct {
	cfg replayer.Config
	w   *replayer.Workload
	rp  *replayer.Replayer
	// stop closes the embedded sim of --sim; it does nothing without.
	stop func()
}

// startSim starts the embedded sim of --sim, whose URL becomes cfg's
// endpoint, adding a problem to errs (--sim beside --base-url, a sim
// that did not start); the function returned closes it.
func startSim(ctx context.Context, errs *[]error, sim bool, fs *pflag.FlagSet, cfg *replayer.Config) func() {
	if !sim {
		return func() {}
	}
	if cli.FlagChanged(fs, "base-url") {
		*errs = append(*errs, errors.New("--sim and --base-url exclude each other"))
		return func() {}
	}
	var sims vllmsim.Fleet
	url, err := sims.Start(ctx, vllmsim.Config{BlockSize: cfg.BlockSize, GPUBlocks: cfg.GPUBlocks, TimeScale: 1,
		EnablePromptTokensDetails: true, Seed: int64(cfg.Seed)})
	if err != nil {
		*errs = append(*errs, fmt.Errorf("--sim: %w", err))
	}
	cfg.Endpoint, cfg.HTTP = url, vllmsim.ClientOf(ctx)
	return sims.Close
}

// replayInto runs the replay into the results directory: the manifest's
// settings, the request rows, the run row.
func replayInto(ctx context.Context, c *cli.Call, out *harness.Output, f *replayer.WorkloadFlags, r replayRun) error {
	cfg, w, rp := r.cfg, r.w, r.rp
	info := rp.Info()
	out.Manifest.Settings = f.Settings(cfg, w)
	replaySettings(out.Manifest.Settings, info)
	if err := out.WriteManifest(); err != nil {
		return err
	}
	sinks, err := out.OpenAll(Suite.Files)
	if err != nil {
		return err
	}
	reqs, runs := sinks[0], sinks[1]
	ws, err := w.WorkingSet(cfg.Dispatch, cfg.Concurrency)
	if err != nil {
		return err
	}
	c.Logf("%s of %s to %s at %s (%s dispatch; block %d, %s; %d GPU blocks, %s)",
		units.Count(len(w.Requests), "request", "requests"), w.Name, info.Model, info.Endpoint, cfg.Dispatch, info.BlockSize, info.BlockSource, info.GPUBlocks, info.GPUSource)
	pr := harness.ProgressOf(c.Stderr)
	pr.Plan(1)
	pr.Begin(fmt.Sprintf("%s of %s", units.Count(len(w.Requests), "request", "requests"), w.Name))
	sum, rerr := rp.Run(ctx, reqs, nil)
	sum.SetWorkingSet(ws)
	if ctx.Err() != nil {
		// Interrupted: the run row covers the requests answered so far.
		sum.Interrupted(len(w.Requests))
		pr.End(fmt.Sprintf("interrupted: %d of %s answered", sum.Requests, units.Count(len(w.Requests), "request", "requests")))
		if err := runs.Write(sum.Row(Suite.Name)); err != nil {
			return err
		}
		return rerr
	}
	pr.End("")
	if err := runs.Write(sum.Row(Suite.Name)); err != nil {
		return err
	}
	if rerr == nil {
		rerr = rp.Tripped()
	}
	return rerr
}

// replaySettings records what the replay learnt of the server.
func replaySettings(s map[string]string, info replayer.Info) {
	s["endpoint"], s["model"], s["server_version"] = info.Endpoint, info.Model, info.Version
	s["block_size"], s["block_size_source"] = strconv.Itoa(info.BlockSize), info.BlockSource
	s["num_gpu_blocks"], s["num_gpu_blocks_source"] = strconv.Itoa(info.GPUBlocks), info.GPUSource
	s["max_model_len"], s["simulated"] = strconv.Itoa(info.MaxModelLen), strconv.FormatBool(info.Simulated)
	s["nonce"], s["bytes_per_token"] = strconv.FormatUint(info.Nonce, 10), strconv.FormatInt(info.BytesPerToken, 10)
	s["prompt_form"], s["server_family"] = info.PromptForm, info.Family.String()
	if info.WarmError != "" {
		s["warm_up_error"] = info.WarmError
	}
	if info.MetricsError != "" {
		s["metrics_error"] = info.MetricsError
	}
}
