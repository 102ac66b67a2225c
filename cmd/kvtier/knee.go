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
	"github.com/kvtier/kvtier/harness/knee"
	"github.com/kvtier/kvtier/harness/replay"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/vllmsim"
)

// kneeFlags are the flags of kvtier knee besides the workload's.
type kneeFlags struct {
	capacities, capacityBlocks string
	serverCmd                  string
	healthTimeout, grace       time.Duration
	blockSize                  int
}

const kneeUsage = `Usage: kvtier knee [--capacities SIZES | --capacity-blocks N,...] [--server-cmd COMMAND] [flags]

For each GPU KV capacity, starts a server with that many KV blocks, waits for GET /health,
replays the workload (a --trace, or synthetic closed-loop sessions: by default the
reference's knee load, 4 sessions of 6 turns), records realized APC and TTFT percentiles,
and stops the server; writes knee.csv (per capacity), knee_requests.csv (per request),
knee_curve.csv (the LRU model's predicted curve), the servers' logs, plots and
manifest.json, and prints the table.

--server-cmd is split into arguments as a POSIX shell splits words ('...' literal, "..."
with \" \\ \$ escapes, \ outside quotes) but run directly, without a shell: no variables,
globs or pipes. {blocks}, {tokens} (blocks × --block-size), {bytes} and {port} are
replaced per capacity, e.g.
  --server-cmd 'vllm serve MODEL --num-gpu-blocks-override {blocks} --max-model-len {tokens} --port {port} --enable-prefix-caching'
The server leads a process group of its own; it is stopped with SIGTERM to the group,
then SIGKILL after --stop-grace, also on Ctrl-C. Without --server-cmd each capacity is an
embedded kvtier simulator (rows say simulated=true).`

// runKnee sweeps a server's GPU KV capacity with one workload.
func runKnee(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("knee", kneeUsage, stderr)
	var f workloadFlags
	var k kneeFlags
	var out outputFlags
	f.add(fs)
	out.add(fs)
	fs.StringVar(&k.capacities, "capacities", "1.2GB,2.4GB,3.6GB,9.7GB,14.5GB", "GPU KV capacities (bytes; converted to blocks with the model's geometry)")
	fs.StringVar(&k.capacityBlocks, "capacity-blocks", "", "GPU KV capacities in blocks, instead of --capacities")
	fs.StringVar(&k.serverCmd, "server-cmd", "", "command that starts a server at one capacity (see above; default: the embedded simulator)")
	k.healthTimeout, k.grace = 15*time.Minute, 30*time.Second
	fs.Var(durationValue{&k.healthTimeout}, "health-timeout", "how long a server may take to answer GET /health")
	fs.Var(durationValue{&k.grace}, "stop-grace", "between SIGTERM and SIGKILL when a server is stopped")
	fs.IntVar(&k.blockSize, "block-size", kv.DefaultBlockTokens, "tokens per KV block of the servers (give the server command the same)")
	r, code, ok := parseOptions(fs, args, stderr, func() (kneeRun, error) {
		cfg, w, err := k.config(ctx, fs, &f, out)
		return kneeRun{cfg, w}, err
	})
	if !ok {
		return code
	}
	cfg, w := r.cfg, r.w
	cfg.Log, cfg.Replay.Log = stderr, nil
	var dir string
	code = suiteRun{cmd: "knee", suite: knee.Suite, out: out, args: args, plots: true,
		run: func(ctx context.Context, o *harness.Output) error {
			dir = o.Dir
			return kneeInto(ctx, o, &f, cfg, w)
		}}.exec(ctx, stdout, stderr)
	return printSection(stdout, stderr, "knee", dir, code, report.WriteKnee)
}

// kneeRun is a validated kvtier knee.
type kneeRun struct {
	cfg knee.Config
	w   *replay.Workload
}

// config checks every flag and returns the sweep's configuration and
// workload.
func (k *kneeFlags) config(ctx context.Context, fs *pflag.FlagSet, f *workloadFlags, out outputFlags) (knee.Config, *replay.Workload, error) {
	var errs []error
	rc, w := f.config(ctx, fs, &errs)
	f.model.blockSize = k.blockSize
	g, err := f.model.geometry()
	errs = append(errs, err, out.check())
	cfg := knee.Config{BlockSize: k.blockSize, BytesPerToken: g.BytesPerToken(), Replay: rc, HealthTimeout: k.healthTimeout, Grace: k.grace}
	cfg.Capacities = k.blocks(&errs, fs.Changed("capacities"), g.BlockBytes())
	if k.serverCmd != "" {
		c, err := knee.ParseCommand(k.serverCmd)
		cfg.Server = c
		errs = append(errs, option.Wrap("server-cmd", err))
	} else {
		cfg.Sim = vllmsim.Config{Model: g.Model, Geometry: g, BlockSize: k.blockSize, TimeScale: 1, Seed: int64(f.seed), EnablePromptTokensDetails: true}
	}
	rc.Endpoint = "http://127.0.0.1:1" // set per capacity; checked here for the other fields
	errs = append(errs, rc.Validate())
	if err := errors.Join(errs...); err != nil {
		return cfg, nil, err
	}
	return cfg, w, cfg.Validate()
}

// blocks returns the capacities in blocks, ascending: --capacity-blocks,
// or --capacities over the block's bytes.
func (k *kneeFlags) blocks(errs *[]error, sizesGiven bool, blockBytes int64) []int {
	var out []int
	if k.capacityBlocks != "" {
		if sizesGiven {
			*errs = append(*errs, option.Errorf("capacity-blocks", "given with --capacities: give one of them"))
		}
		out = listFlag(errs, "capacity-blocks", k.capacityBlocks, atoiFlag, 1)
	} else {
		for _, b := range listFlag(errs, "capacities", k.capacities, parseBytesFlag, 1) {
			n := b / max(blockBytes, 1)
			if n < 1 {
				*errs = append(*errs, option.Errorf("capacities", "%d bytes hold no block of %d bytes", b, blockBytes))
				continue
			}
			out = append(out, int(n))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func parseBytesFlag(s string) (int64, error) { return parseCapacity(s) }

// kneeInto runs the sweep into the results directory.
func kneeInto(ctx context.Context, out *harness.Output, f *workloadFlags, cfg knee.Config, w *replay.Workload) error {
	cfg.Dir = out.Dir
	s := f.settings(cfg.Replay, w)
	s["capacities_blocks"] = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(cfg.Capacities)), ","), "[]")
	s["block_size"], s["bytes_per_token"] = strconv.Itoa(cfg.BlockSize), strconv.FormatInt(cfg.BytesPerToken, 10)
	s["server"], s["health_timeout"], s["stop_grace"] = knee.EmbeddedName, cfg.HealthTimeout.String(), cfg.Grace.String()
	if cfg.Server != nil {
		s["server"] = strings.Join(redact.Args(cfg.Server.Args), " ")
	}
	out.Manifest.Settings = s
	if err := out.WriteManifest(); err != nil {
		return err
	}
	c, err := out.OpenAll(knee.Suite.Files)
	if err != nil {
		return err
	}
	sinks := knee.Sinks{Requests: c[0], Capacities: c[1], Curve: c[2], AddFile: out.AddFile}
	return knee.Run(ctx, cfg, w, sinks)
}
