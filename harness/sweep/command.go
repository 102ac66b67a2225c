package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer/peerflag"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/tiers/tierflag"
	"github.com/kvtier/kvtier/units"
)

// flags are the flags of kvtier sweep.
type flags struct {
	call                             *cli.Call
	fs                               *pflag.FlagSet
	out                              cli.OutputFlags
	model                            cli.ModelFlags
	policy                           cli.PolicyFlags
	backend                          tierflag.BackendFlags
	token                            peerflag.TokenFlags // sent to the remote tier's peer
	tiers, layouts, prefixes, copies string
	directions                       string
	seed                             uint64
	opts                             Options // defaults, with the tiers' own options
}

// Bind adds the flags to fs.
func (f *flags) Bind(fs *pflag.FlagSet, c *cli.Call) {
	f.call, f.fs = c, fs
	f.opts = DefaultOptions()
	f.out.Add(fs)
	f.model.Add(fs)
	f.policy.Add(fs, f.opts.Policy, true)
	f.backend.Add(fs)
	f.token.Add(fs)
	fs.StringVar(&f.tiers, "tiers", "", "comma-separated tiers to run (default all: "+strings.Join(tiers.Names(), ", ")+")")
	fs.StringVar(&f.layouts, "layout", "layerwise,blockwise", "pool layouts: layerwise (vLLM paged, one chunk per layer and K/V), blockwise (one chunk per block)")
	fs.StringVar(&f.prefixes, "prefix", "1k,2k,4k,8k,16k,32k,64k", "prefix lengths in tokens (k = 1024)")
	fs.StringVar(&f.copies, "copy", "percopy,batch,contiguous", "copy modes for tiers that move bytes: percopy, batch (cuMemcpyBatchAsync), contiguous (upper bound)")
	fs.StringVar(&f.directions, "direction", "load", tierflag.DirectionUsage)
	fs.Uint64Var(&f.seed, "seed", f.opts.Seed, "seed of block placement and the data pattern")
	for _, s := range tiers.All() {
		if o := f.opts.TierOptions[s.Name]; o != nil {
			heading := strings.ToUpper(s.Name[:1]) + s.Name[1:] + " tier"
			cli.UnderHeading(fs, heading, func(fs *pflag.FlagSet) { cli.AddFields(fs, o.Fields()) })
		}
	}
}

// Resolve turns the flags into the sweep's options, reporting every
// problem at once.
func (f *flags) Resolve() (Options, error) {
	o := f.opts
	var errs []error
	if t := strings.TrimSpace(f.tiers); t != "" && t != "all" {
		o.Tiers = cli.ListFlag(&errs, "tiers", t, cli.Trimmed, o.Tiers...)
	}
	o.Layouts = cli.ListFlag(&errs, "layout", f.layouts, func(s string) (kv.Layout, error) { return kv.ParseLayout(strings.TrimSpace(s)) }, kv.Layouts()...)
	o.Prefixes = cli.ListFlag(&errs, "prefix", f.prefixes, units.ParseTokens, 1)
	o.Copy = cli.ListFlag(&errs, "copy", f.copies, func(s string) (tiers.CopyMode, error) { return tiers.ParseCopyMode(strings.TrimSpace(s)) }, tiers.PerCopy)
	o.Directions = cli.ListFlag(&errs, "direction", f.directions, tierflag.ParseDirection, tiers.Load)
	o.Seed = f.seed
	errs = append(errs, f.token.Check(f.call.Getenv))
	for _, to := range o.TierOptions {
		if po, ok := to.(tiers.PeerOptions); ok {
			s := po.PeerSettings()
			s.Token, s.Library = f.token.Value(f.call.Getenv), tierflag.Libraries(f.call.Getenv).IBVerbs
		}
	}
	var err error
	if o.Geometry, err = f.model.Geometry(); err != nil {
		errs = append(errs, err)
		o.Geometry = f.opts.Geometry
	}
	if o.Policy, err = f.policy.Policy(); err != nil {
		errs = append(errs, err)
		o.Policy.Budget = f.opts.Policy.Budget
	}
	errs = append(errs, o.Validate(), f.backend.Validate(), f.out.Check())
	if f.backend.All {
		errs = append(errs, o.ValidateAll())
		if f.backend.Name == "host" { // the host backend, not a tier
			errs = append(errs, option.Errorf("gpu", "all spreads the tiers over GPUs, and the host backend has none (use --backend cuda)")) // --gpu, not a tier
		}
	}
	return o, errors.Join(errs...)
}

// StandInPrefixes and StandInLayouts are the grid of a plain kvtier
// sweep where the backend has no GPU: the CPU stands in for one, and the
// GPU's grid (every prefix to 64k, both layouts) would take many minutes
// to say what a few points say of a stand-in.
var (
	StandInPrefixes = []int{1 << 10, 4 << 10}
	StandInLayouts  = []kv.Layout{kv.Layerwise}
)

// standInGrid narrows opts to the stand-in's grid when b has no device
// memory and no flag chose the prefixes or layouts, and says so; "" when
// it leaves opts as they are.
func (f *flags) standInGrid(b tiers.Backend, opts *Options) string {
	if b.Caps().DeviceMemory || f.fs == nil || cli.FlagChanged(f.fs, "prefix") || cli.FlagChanged(f.fs, "layout") {
		return ""
	}
	opts.Prefixes, opts.Layouts = slices.Clone(StandInPrefixes), slices.Clone(StandInLayouts)
	return fmt.Sprintf("no GPU: a grid sized for the host stand-in, --prefix %s --layout %s (give --prefix and --layout for more; a GPU's default is --prefix 1k,2k,4k,8k,16k,32k,64k --layout layerwise,blockwise)",
		prefixFlag(opts.Prefixes), opts.Layouts[0])
}

// prefixFlag writes prefix lengths as --prefix takes them: 1k,4k.
func prefixFlag(ps []int) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%dk", p>>10))
	}
	return strings.Join(out, ",")
}

// runCommand runs the tier sweep and writes a results directory.
func runCommand(ctx context.Context, c *cli.Call, f *flags, opts Options) int {
	for _, name := range tiers.Names() {
		po, ok := opts.TierOptions[name].(tiers.PeerOptions)
		if !ok || po.PeerAddr() == "" || (len(opts.Tiers) > 0 && !slices.Contains(opts.Tiers, name)) {
			continue
		}
		if err := peerflag.PeerReachable(ctx, po.PeerAddr(), po.PeerSettings().Token); err != nil {
			return peerflag.Unreachable(ctx, c, err)
		}
	}
	// Open the backend before writing anything, so a backend that cannot
	// open is one line and exit 2 with no results directory.
	bs, why, err := tierflag.OpenBackends(ctx, &f.backend, f.backend.Config(c.Stderr, tierflag.Libraries(c.Getenv)))
	if err != nil {
		return c.UsageErr(err)
	}
	defer tierflag.CloseAll(bs, c.Stderr)
	for _, w := range why {
		c.Logf("backend %s; using %s", w, bs[0].Name())
	}
	gpuNote := f.backend.UnusedGPU(bs[0])
	if gpuNote != "" {
		c.Logf("%s", gpuNote)
	}
	for _, b := range bs {
		c.Logf("%s, backend %s (%s)", opts.Geometry.Model, b.Name(), b.Device())
	}
	if note := f.standInGrid(bs[0], &opts); note != "" {
		c.Logf("%s", note)
	}
	return cli.SuiteRun{Call: c, Suite: Suite, Out: f.out, Plots: true,
		Run: func(ctx context.Context, out *harness.Output) error {
			for _, w := range why {
				out.Manifest.Warnings = append(out.Manifest.Warnings, "backend "+w)
			}
			if gpuNote != "" {
				out.Manifest.Warnings = append(out.Manifest.Warnings, gpuNote)
			}
			var err error
			if f.backend.All {
				err = RunAll(ctx, opts, bs, out, c.Stderr)
			} else {
				err = Run(ctx, opts, bs[0], out, c.Stderr)
			}
			if err != nil {
				return err
			}
			out.Manifest.Settings["backend"] = f.backend.Name
			return nil
		}}.Exec(ctx)
}

// Command is kvtier sweep.
var Command = cli.Register(&cli.Command{Name: "sweep", Order: 30, Run: cli.Bound(runCommand),
	Summary:   "the tier sweep: fetch a reused prefix from hbm, host, remote, disk, or recompute it",
	Usage:     "Usage: kvtier sweep [flags]\n\nFetches a reused KV prefix from every tier and writes sweep.csv, sweep_summary.csv and manifest.json.",
	ScriptEnv: []cli.EnvFlag{{Env: "KVTIER_PEER", Flag: "--peer"}, {Env: "KVTIER_DISK_DIR", Flag: "--disk-dir"}, {Env: "KVTIER_DISK_MAX", Flag: "--disk-max"}, {Env: "KVTIER_BACKEND", Flag: "--backend"}}})
