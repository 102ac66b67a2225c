package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// exitInterrupted is the status of a sweep stopped by SIGINT/SIGTERM,
// as a shell reports a process killed by SIGINT.
const exitInterrupted = 130

// sweepFlags are the raw flag values of kvtier sweep.
type sweepFlags struct {
	opts                                      harness.SweepOptions
	tiers, layouts, prefixes, copies, hostMem string
	budget, out                               string
}

// parseSweep turns the flags into options, reporting every problem at once.
func (f *sweepFlags) parse() (harness.SweepOptions, error) {
	o := f.opts
	var errs []error
	if strings.TrimSpace(f.tiers) != "" && f.tiers != "all" {
		o.Tiers = nil
		for _, t := range strings.Split(f.tiers, ",") {
			o.Tiers = append(o.Tiers, strings.TrimSpace(t))
		}
	}
	// A list that fails to parse is reported here and replaced by a valid
	// placeholder, so Validate does not report it a second time.
	o.Layouts = listFlag(&errs, "--layout", f.layouts, func(s string) (kv.Layout, error) { return kv.ParseLayout(strings.TrimSpace(s)) }, kv.Layouts()...)
	o.Prefixes = listFlag(&errs, "--prefix", f.prefixes, units.ParseTokens, 1)
	o.Copy = listFlag(&errs, "--copy", f.copies, func(s string) (tiers.CopyMode, error) { return tiers.ParseCopyMode(strings.TrimSpace(s)) }, tiers.PerCopy)
	o.HostMem = tiers.MemKind(f.hostMem)
	o.Budget = durationFlag(&errs, "--budget", f.budget)
	if err := o.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := checkOutDir(f.out); err != nil {
		errs = append(errs, fmt.Errorf("--out: %w", err))
	}
	return o, errors.Join(errs...)
}

// durationFlag parses the value of the flag called name with parseBudget.
// A value that does not parse adds "name: error" to errs and yields one
// second, a valid placeholder, so that Validate does not report it again.
func durationFlag(errs *[]error, name, value string) time.Duration {
	d, err := parseBudget(value)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("%s: %w", name, err))
		return time.Second
	}
	return d
}

// parseBudget reads a duration ("30s", "2m") or plain seconds ("30").
func parseBudget(s string) (time.Duration, error) {
	if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		if v <= 0 {
			return 0, fmt.Errorf("must be positive, got %q", s)
		}
		return time.Duration(v * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (want e.g. 30s, 2m, 30)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive, got %q", s)
	}
	return d, nil
}

// checkOutDir says whether dir could be created and written, without
// creating anything: the nearest existing ancestor must be a writable
// directory.
func checkOutDir(dir string) error {
	if dir == "" {
		return errors.New("empty directory name")
	}
	p := filepath.Clean(dir)
	for {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s: %s is not a directory", dir, p)
			}
			if err := unix.Access(p, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Errorf("%s: %s is not writable: %w", dir, p, err)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) {
			return fmt.Errorf("%s: %w", dir, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return fmt.Errorf("%s: no existing parent directory", dir)
		}
		p = parent
	}
}

// runSweep runs the tier sweep and writes a results directory.
func runSweep(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := pflag.NewFlagSet("sweep", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	f := sweepFlags{opts: harness.DefaultSweepOptions()}
	o := &f.opts
	d := harness.DefaultSweepOptions()
	fs.StringVar(&o.Backend, "backend", d.Backend, "compute backend: auto, "+strings.Join(tiers.BackendNames(), ", ")+" (auto picks the best that opens and says why the others did not)")
	fs.StringVar(&f.tiers, "tiers", "", "comma-separated tiers to run (default all: "+strings.Join(tiers.Names(), ", ")+")")
	fs.StringVar(&o.Model, "model", "", "model preset ("+strings.Join(kv.ModelNames(), ", ")+"; default "+kv.DefaultModel+")")
	fs.StringVar(&o.ModelConfig, "model-config", "", "Hugging Face config.json of the model (or its directory), instead of --model")
	fs.IntVar(&o.BlockTokens, "block-size", d.BlockTokens, "tokens per KV block")
	fs.StringVar(&f.layouts, "layout", "layerwise,blockwise", "pool layouts: layerwise (vLLM paged, one chunk per layer and K/V), blockwise (one chunk per block)")
	fs.StringVar(&f.prefixes, "prefix", "1k,2k,4k,8k,16k,32k,64k", "prefix lengths in tokens (k = 1024)")
	fs.IntVar(&o.Reps, "reps", d.Reps, "measured samples per configuration")
	fs.IntVar(&o.Warmup, "warmup", d.Warmup, "discarded warm-up samples per configuration")
	fs.Uint64Var(&o.Seed, "seed", d.Seed, "seed of block placement and the data pattern")
	fs.StringVar(&f.copies, "copy", "percopy,batch,contiguous", "copy modes for tiers that move bytes: percopy, batch (cuMemcpyBatchAsync), contiguous (upper bound)")
	fs.StringVar(&f.hostMem, "host-mem", string(d.HostMem), "host tier source memory: pinned or pageable")
	fs.IntVar(&o.GPU, "gpu", d.GPU, "CUDA device ordinal")
	fs.IntVar(&o.NUMA, "numa", d.NUMA, "NUMA node for host pools (-1: leave to the kernel)")
	fs.StringVar(&o.Peer, "peer", "", "HOST:PORT of a kvtier serve peer for the remote tier (default: an embedded loopback peer)")
	fs.StringVar(&o.Transport, "transport", d.Transport, "remote tier transport: tcp or verbs")
	fs.IntVar(&o.Conns, "conns", d.Conns, "remote tier: parallel TCP connections or RC QPs")
	fs.StringVar(&o.RDMADevice, "rdma-device", "", "RDMA device, e.g. mlx5_0 (default: the first active port)")
	fs.IntVar(&o.GIDIndex, "gid-index", d.GIDIndex, "GID index (-1: a RoCE v2 GID picked automatically)")
	fs.StringVar(&f.budget, "budget", "30s", "time budget of one configuration: fewer reps, or a skipped row, beyond it")
	fs.StringVar(&f.out, "out", defaultOut(), "results directory")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: kvtier sweep [flags]\n\nFetches a reused KV prefix from every tier and writes sweep.csv, sweep_summary.csv and manifest.json.")
		fs.PrintDefaults()
	}
	if code, ok := parseNoArgs(fs, args, stderr); !ok {
		return code
	}
	opts, err := f.parse()
	if err != nil {
		return usageErr(stderr, "sweep", err)
	}

	if opts.Peer != "" && (len(opts.Tiers) == 0 || slices.Contains(opts.Tiers, "remote")) {
		if err := peerReachable(ctx, opts.Peer); err != nil {
			return usageErr(stderr, "sweep", err)
		}
	}

	// Open the backend before writing anything, so a backend that cannot
	// open is one line and exit 2 with no results directory.
	opts.Libs = libraries()
	b, why, err := tiers.OpenBackend(ctx, opts.Backend, tiers.BackendConfig{GPU: opts.GPU, NUMA: opts.NUMA, Log: stderr, Libs: opts.Libs})
	if err != nil {
		return usageErr(stderr, "sweep", fmt.Errorf("--backend %s: %w", opts.Backend, err))
	}
	defer b.Close()
	for _, w := range why {
		fmt.Fprintf(stderr, "kvtier sweep: backend %s; using %s\n", w, b.Name())
	}
	opts.Opened, opts.Fallback = b, why

	out, err := harness.CreateOutput(f.out, "sweep", append([]string{"kvtier", "sweep"}, args...), sysConfig("/"), stderr)
	if err != nil {
		return usageErr(stderr, "sweep", err)
	}
	fmt.Fprintf(stderr, "kvtier sweep: %s, backend %s (%s), writing %s\n", opts.Geometry().Model, b.Name(), b.Device(), out.Dir)
	serr := harness.Sweep(ctx, opts, out, stderr)
	interrupted := serr != nil && ctx.Err() != nil
	if serr != nil && !interrupted && !errors.Is(serr, harness.ErrMeasurementFailed) {
		interrupted = true // stopped early by a failure; keep what was measured
	}
	cerr := out.Close(interrupted)
	if cerr != nil {
		fmt.Fprintf(stderr, "kvtier sweep: %v\n", cerr)
	}
	if !interrupted {
		paths, perr := plots.Dir(out.Dir)
		for _, p := range paths {
			out.AddFile(p)
		}
		if perr != nil {
			fmt.Fprintf(stderr, "kvtier sweep: warning: plots: %v\n", perr)
		}
		if len(paths) > 0 {
			if err := out.WriteManifest(); err != nil {
				fmt.Fprintf(stderr, "kvtier sweep: %v\n", err)
			}
		}
	}
	fmt.Fprintf(stderr, "kvtier sweep: wrote %s (%s)\n", out.Dir, strings.Join(out.Manifest.Files, ", "))
	switch {
	case interrupted && ctx.Err() != nil:
		fmt.Fprintf(stderr, "kvtier sweep: interrupted; rows measured so far are kept\n")
		return exitInterrupted
	case serr != nil:
		fmt.Fprintf(stderr, "kvtier sweep: %v\n", serr)
		return exitFail
	case cerr != nil:
		return exitFail
	}
	fmt.Fprintf(stdout, "%s\n", filepath.Join(out.Dir, results.SweepFile))
	return exitOK
}
