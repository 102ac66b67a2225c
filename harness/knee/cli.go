package knee

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
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/replayer"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/workload"
)

// CLI is kvtier knee (Command is a server command line).
var CLI = cli.Register(&cli.Command{Name: "knee", Order: 130, Run: runCommand,
	Summary: "sweep a server's GPU KV capacity with one workload: the capacity knee",
	Usage: `Usage: kvtier knee [--capacities SIZES | --capacity-blocks N,...] [--server-cmd COMMAND] [flags]

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
embedded kvtier simulator (rows say simulated=true).`})

// kneeFlags are the flags of kvtier knee besides the workload's.
type kneeFlags struct {
	capacities, capacityBlocks string
	serverCmd                  string
	healthTimeout, grace       time.Duration
	blockSize                  int
}

// runCommand sweeps a server's GPU KV capacity with one workload.
func runCommand(ctx context.Context, c *cli.Call) int {
	fs := c.FlagSet()
	var f replayer.WorkloadFlags
	var k kneeFlags
	var out cli.OutputFlags
	f.Add(fs)
	out.Add(fs)
	fs.StringVar(&k.capacities, "capacities", "1.2GB,2.4GB,3.6GB,9.7GB,14.5GB", "GPU KV capacities (bytes, decimals taken: 1.45GiB; rounded down to whole blocks of the model's geometry, recorded as capacities_blocks)")
	fs.StringVar(&k.capacityBlocks, "capacity-blocks", "", "GPU KV capacities in blocks, instead of --capacities")
	fs.StringVar(&k.serverCmd, "server-cmd", "", "command that starts a server at one capacity (see above; default: the embedded simulator)")
	k.healthTimeout, k.grace = 15*time.Minute, 30*time.Second
	fs.Var(cli.DurationValue{D: &k.healthTimeout}, "health-timeout", "how long a server may take to answer GET /health")
	fs.Var(cli.DurationValue{D: &k.grace}, "stop-grace", "between SIGTERM and SIGKILL when a server is stopped")
	fs.IntVar(&k.blockSize, "block-size", kv.DefaultBlockTokens, "tokens per KV block of the servers (give the server command the same)")
	r, code, ok := cli.ParseOptions(fs, c.Args, c.Stderr, c.Getenv, func() (kneeRun, error) {
		cfg, w, err := k.config(ctx, fs, &f, out)
		return kneeRun{cfg, w}, err
	})
	if !ok {
		return code
	}
	cfg, w := r.cfg, r.w
	cfg.Log, cfg.Replay.Log = c.Stderr, nil
	var dir string
	code = cli.SuiteRun{Call: c, Suite: Suite, Out: out, Plots: true,
		Run: func(ctx context.Context, o *harness.Output) error {
			dir = o.Dir
			return kneeInto(ctx, o, &f, cfg, w)
		}}.Exec(ctx)
	return c.PrintSection(dir, code, writeKnee)
}

// kneeRun is a validated kvtier knee.
type kneeRun struct {
	cfg Config
	w   *replayer.Workload
}

// config checks every flag and returns the sweep's configuration and
// workload.
func (k *kneeFlags) config(ctx context.Context, fs *pflag.FlagSet, f *replayer.WorkloadFlags, out cli.OutputFlags) (Config, *replayer.Workload, error) {
	var errs []error
	f.Model.BlockSize = k.blockSize
	g, err := f.Model.Geometry()
	errs = append(errs, err, out.Check())
	caps := k.blocks(&errs, fs.Changed("capacities"), g.BlockBytes()) // checked before the workload is read
	rc, w := f.Config(ctx, fs, &errs)
	cfg := Config{BlockSize: k.blockSize, BytesPerToken: g.BytesPerToken(), Replay: rc, HealthTimeout: k.healthTimeout, Grace: k.grace, Capacities: caps}
	if k.serverCmd != "" {
		c, err := ParseCommand(k.serverCmd)
		cfg.Server = c
		errs = append(errs, option.Wrap("server-cmd", err))
	} else {
		cfg.Sim = vllmsim.Config{Model: g.Model, Geometry: g, BlockSize: k.blockSize, TimeScale: 1, Seed: int64(f.Seed), EnablePromptTokensDetails: true}
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
		out = cli.ListFlag(errs, "capacity-blocks", k.capacityBlocks, positiveBlocks, 1)
	} else {
		for _, b := range cli.ListFlag(errs, "capacities", k.capacities, workload.ParseCapacity, 1) {
			n, _ := units.Blocks(b, max(blockBytes, 1)) // the manifest's capacities_blocks says how it was rounded
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

// positiveBlocks parses a capacity in blocks, at least 1.
func positiveBlocks(s string) (int, error) {
	n, err := cli.Atoi(s)
	if err == nil && n < 1 {
		err = fmt.Errorf("%d blocks: must be positive", n)
	}
	return n, err
}

// kneeInto runs the sweep into the results directory.
func kneeInto(ctx context.Context, out *harness.Output, f *replayer.WorkloadFlags, cfg Config, w *replayer.Workload) error {
	cfg.Dir = out.Dir
	s := f.Settings(cfg.Replay, w)
	s["capacities_blocks"] = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(cfg.Capacities)), ","), "[]")
	s["block_size"], s["bytes_per_token"] = strconv.Itoa(cfg.BlockSize), strconv.FormatInt(cfg.BytesPerToken, 10)
	s["server"], s["health_timeout"], s["stop_grace"] = EmbeddedName, cfg.HealthTimeout.String(), cfg.Grace.String()
	if cfg.Server != nil {
		s["server"] = strings.Join(redact.Args(cfg.Server.Args), " ")
	}
	out.Manifest.Settings = s
	if err := out.WriteManifest(); err != nil {
		return err
	}
	c, err := out.OpenAll(Suite.Files)
	if err != nil {
		return err
	}
	sinks := Sinks{Requests: c[0], Capacities: c[1], Curve: c[2], AddFile: out.AddFile}
	return Run(ctx, cfg, w, sinks)
}
