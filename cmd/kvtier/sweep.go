package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// sweepFlags are the flags of kvtier sweep.
type sweepFlags struct {
	out                              outputFlags
	model                            modelFlags
	policy                           policyFlags
	backend                          backendFlags
	token                            tokenFlags // sent to the remote tier's peer
	tiers, layouts, prefixes, copies string
	directions                       string
	seed                             uint64
	opts                             sweep.Options // defaults, with the tiers' own options
}

func (f *sweepFlags) add(fs *pflag.FlagSet) {
	f.opts = sweep.DefaultOptions()
	f.out.add(fs)
	f.model.add(fs)
	f.policy.add(fs, f.opts.Policy, true)
	f.backend.add(fs)
	f.token.add(fs)
	fs.StringVar(&f.tiers, "tiers", "", "comma-separated tiers to run (default all: "+strings.Join(tiers.Names(), ", ")+")")
	fs.StringVar(&f.layouts, "layout", "layerwise,blockwise", "pool layouts: layerwise (vLLM paged, one chunk per layer and K/V), blockwise (one chunk per block)")
	fs.StringVar(&f.prefixes, "prefix", "1k,2k,4k,8k,16k,32k,64k", "prefix lengths in tokens (k = 1024)")
	fs.StringVar(&f.copies, "copy", "percopy,batch,contiguous", "copy modes for tiers that move bytes: percopy, batch (cuMemcpyBatchAsync), contiguous (upper bound)")
	fs.StringVar(&f.directions, "direction", "load", directionUsage)
	fs.Uint64Var(&f.seed, "seed", f.opts.Seed, "seed of block placement and the data pattern")
	for _, s := range tiers.All() {
		if o := f.opts.TierOptions[s.Name]; o != nil {
			addFields(fs, o.Fields())
		}
	}
}

// options turns the flags into the sweep's options, reporting every
// problem at once.
func (f *sweepFlags) options() (sweep.Options, error) {
	o := f.opts
	o.LibIBVerbs = libraries().IBVerbs
	var errs []error
	if t := strings.TrimSpace(f.tiers); t != "" && t != "all" {
		o.Tiers = nil
		for name := range strings.SplitSeq(t, ",") {
			o.Tiers = append(o.Tiers, strings.TrimSpace(name))
		}
	}
	o.Layouts = listFlag(&errs, "layout", f.layouts, func(s string) (kv.Layout, error) { return kv.ParseLayout(strings.TrimSpace(s)) }, kv.Layouts()...)
	o.Prefixes = listFlag(&errs, "prefix", f.prefixes, units.ParseTokens, 1)
	o.Copy = listFlag(&errs, "copy", f.copies, func(s string) (tiers.CopyMode, error) { return tiers.ParseCopyMode(strings.TrimSpace(s)) }, tiers.PerCopy)
	o.Directions = listFlag(&errs, "direction", f.directions, parseDirection, tiers.Load)
	o.Seed = f.seed
	if ro, ok := o.TierOptions["remote"].(*tiers.RemoteOptions); ok {
		ro.Token = f.token.value()
	}
	var err error
	if o.Geometry, err = f.model.geometry(); err != nil {
		errs = append(errs, err)
		o.Geometry = f.opts.Geometry
	}
	if o.Policy, err = f.policy.policy(); err != nil {
		errs = append(errs, err)
		o.Policy.Budget = f.opts.Policy.Budget
	}
	errs = append(errs, o.Validate(), f.backend.validate(), f.out.check())
	if f.backend.all {
		errs = append(errs, o.ValidateAll())
		if f.backend.name == "host" {
			errs = append(errs, option.Errorf("gpu", "all spreads the tiers over GPUs, and the host backend has none (use --backend cuda)"))
		}
	}
	return o, errors.Join(errs...)
}

// directionUsage is the one meaning of --direction (sweep, transfer, mesh).
const directionUsage = "comma-separated directions: load (bring KV back from the tier or peer) and store (put it there)"

// parseDirection parses one value of --direction.
func parseDirection(s string) (tiers.Direction, error) {
	return tiers.ParseDirection(strings.TrimSpace(s))
}

// runSweep runs the tier sweep and writes a results directory.
func runSweep(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("sweep", "Usage: kvtier sweep [flags]\n\nFetches a reused KV prefix from every tier and writes sweep.csv, sweep_summary.csv and manifest.json.", stderr)
	var f sweepFlags
	f.add(fs)
	opts, code, ok := parseOptions(fs, args, stderr, f.options)
	if !ok {
		return code
	}
	ro, _ := opts.TierOptions["remote"].(*tiers.RemoteOptions)
	if ro != nil && ro.Peer != "" && (len(opts.Tiers) == 0 || slices.Contains(opts.Tiers, "remote")) {
		if err := peerReachable(ctx, ro.Peer, ro.Token); err != nil {
			return peerUnreachable(ctx, stderr, "sweep", err)
		}
	}
	// Open the backend before writing anything, so a backend that cannot
	// open is one line and exit 2 with no results directory.
	bs, why, err := openBackends(ctx, &f.backend, stderr)
	if err != nil {
		return usageErr(stderr, "sweep", err)
	}
	defer closeAll(bs, stderr)
	b := bs[0]
	for _, w := range why {
		fmt.Fprintf(stderr, "kvtier sweep: backend %s; using %s\n", w, b.Name())
	}
	for _, b := range bs {
		fmt.Fprintf(stderr, "kvtier sweep: %s, backend %s (%s)\n", opts.Geometry.Model, b.Name(), b.Device())
	}
	return suiteRun{cmd: "sweep", suite: sweep.Suite, out: f.out, args: args, plots: true,
		run: func(ctx context.Context, out *harness.Output) error {
			out.Manifest.Warnings = append(out.Manifest.Warnings, prefixAll("backend ", why)...)
			var err error
			if f.backend.all {
				err = sweep.RunAll(ctx, opts, bs, out, stderr)
			} else {
				err = sweep.Run(ctx, opts, b, out, stderr)
			}
			if err != nil {
				return err
			}
			out.Manifest.Settings["backend"] = f.backend.name
			return nil
		}}.exec(ctx, stdout, stderr)
}

// prefixAll returns each of xs with p before it.
func prefixAll(p string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = p + x
	}
	return out
}

// openBackends opens the backend --backend and --gpu name: one, or with
// --gpu all one per GPU the driver sees, in ordinal order. Its errors
// are option errors naming the flag at fault.
func openBackends(ctx context.Context, f *backendFlags, log io.Writer) ([]tiers.Backend, []string, error) {
	b, why, err := tiers.OpenBackend(ctx, f.name, f.backendConfig(log))
	if err != nil {
		return nil, why, option.Wrap("backend", err)
	}
	bs := []tiers.Backend{b}
	if !f.all {
		return bs, why, nil
	}
	counter, ok := b.(interface{ DeviceCount() (int, error) })
	if !ok {
		closeAll(bs, log)
		return nil, why, option.Errorf("gpu", "all spreads the tiers over GPUs, and the %s backend has none", b.Name())
	}
	n, err := counter.DeviceCount()
	for i := 1; err == nil && i < n; i++ {
		cfg := f.backendConfig(log)
		cfg.GPU = i
		var bi tiers.Backend
		if bi, _, err = tiers.OpenBackend(ctx, b.Name(), cfg); err == nil {
			bs = append(bs, bi)
		}
	}
	if err != nil {
		closeAll(bs, log)
		return nil, why, option.Wrap("gpu", fmt.Errorf("all: %w", err))
	}
	return bs, why, nil
}

// closeAll closes every backend of bs, warning of failures on log.
func closeAll(bs []tiers.Backend, log io.Writer) {
	for _, b := range bs {
		if err := b.Close(); err != nil {
			fmt.Fprintf(log, "kvtier: warning: %v\n", err)
		}
	}
}
