package sweep

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// DefaultPrefixes are the prefix lengths a sweep measures by default.
var DefaultPrefixes = []int{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10}

// Options are the resolved options of a tier sweep.
type Options struct {
	Geometry kv.Geometry // resolved model geometry (kv.Resolve)
	Tiers    []string    // registry names; empty means every registered tier
	Layouts  []kv.Layout
	Prefixes []int // tokens; sorted ascending and deduplicated by Validate
	Copy     []tiers.CopyMode
	// Directions are load (the default: what a hit costs) and store
	// (what putting the blocks into the tier costs), in that order.
	Directions []tiers.Direction
	Seed       uint64
	// Policy is the Sampler's: warm-up, reps, and the budget of one
	// configuration (fewer reps when the warm-up shows they would not
	// fit, a skipped row when one rep would not).
	Policy harness.Policy
	// TierOptions are the tiers' own options by tier name, as
	// tiers.Spec.NewOptions made them and the command line set them.
	TierOptions map[string]tiers.Options
	// Root is the root of procfs and sysfs reads ("/").
	Root string
}

// DefaultOptions returns the options of a plain `kvtier sweep`.
func DefaultOptions() Options {
	g, _ := kv.Resolve("", "", kv.DefaultBlockTokens)
	o := Options{
		Geometry: g, Layouts: kv.Layouts(), Prefixes: slices.Clone(DefaultPrefixes), Seed: 1,
		Copy: tiers.CopyModes(), Directions: []tiers.Direction{tiers.Load},
		Policy: harness.Policy{Warmup: harness.DefaultWarmup, Reps: 5, Budget: 30 * time.Second},
		Root:   "/", TierOptions: map[string]tiers.Options{},
	}
	for _, s := range tiers.All() {
		if s.NewOptions != nil {
			o.TierOptions[s.Name] = s.NewOptions()
		}
	}
	return o
}

// Validate checks every option, reporting every problem at once as
// option.Errors, and sorts the prefixes.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) { errs = append(errs, option.Errorf(field, format, args...)) }
	for i, t := range o.Tiers {
		s, err := tiers.Lookup(t)
		if err != nil {
			errs = append(errs, option.Wrap("tiers", err))
			continue
		}
		o.Tiers[i] = s.Name // the tier's name, where t is another it goes by
	}
	if err := o.Geometry.Validate(); err != nil {
		errs = append(errs, option.Wrap("model", err))
	}
	if len(o.Layouts) == 0 {
		bad("layout", "no layout given")
	}
	for _, l := range o.Layouts {
		if _, err := kv.ParseLayout(string(l)); err != nil {
			errs = append(errs, option.Wrap("layout", err))
		}
	}
	errs = append(errs, o.validatePrefixes())
	errs = append(errs, o.Policy.Validate(true))
	if len(o.Copy) == 0 {
		bad("copy", "no copy mode given")
	}
	for _, m := range o.Copy {
		if _, err := tiers.ParseCopyMode(string(m)); err != nil {
			errs = append(errs, option.Wrap("copy", err))
		}
	}
	errs = append(errs, tiers.CheckDirections(o.Directions), o.checkMeasurable())
	// Every tier's options, selected or not: each is a flag the user gave.
	for _, name := range tiers.Names() {
		if to := o.TierOptions[name]; to != nil {
			errs = append(errs, to.Validate())
		}
	}
	return errors.Join(errs...)
}

// checkMeasurable refuses a run that can measure nothing at all: no tier
// selected moves KV in any direction asked (--direction store --tiers
// recompute), and --sync given where no disk store runs.
func (o *Options) checkMeasurable() error {
	dirs := o.directions()
	var why string
	for _, name := range o.selectedTiers() {
		spec, err := tiers.Lookup(name)
		if err != nil {
			return nil // refused as --tiers
		}
		for _, d := range dirs {
			if spec.Has(d) {
				return o.checkSync(dirs)
			}
			why = cmp.Or(why, spec.NoDirectionReason(d))
		}
	}
	if why == "" {
		return nil
	}
	return option.Errorf("direction", "nothing to measure: %s", why)
}

// checkSync refuses --sync where no disk store runs: it says what a
// disk tier store waits for, and nothing else reads it.
func (o *Options) checkSync(dirs []tiers.Direction) error {
	d, ok := o.TierOptions[tierspec.Disk.Name].(*tiers.DiskOptions)
	if !ok || strings.TrimSpace(d.Sync) == "" || d.Sync == tiers.NewDiskOptions().Sync {
		return nil // not given
	}
	if !slices.Contains(dirs, tiers.Store) || !slices.Contains(o.selectedTiers(), tierspec.Disk.Name) {
		return option.Errorf("sync", "%s applies to disk tier stores, and this run has none (add --direction store and the disk tier, or leave it out)", d.Sync)
	}
	return nil
}

// MaxPrefix bounds a prefix length: 16M tokens, beyond any context window.
const MaxPrefix = 1 << 24

func (o *Options) validatePrefixes() error {
	if len(o.Prefixes) == 0 {
		return option.Errorf("prefix", "no prefix length given")
	}
	for _, p := range o.Prefixes {
		if p <= 0 || p > MaxPrefix {
			return option.Errorf("prefix", "want 1 to %d tokens, got %d", MaxPrefix, p)
		}
	}
	sort.Ints(o.Prefixes)
	o.Prefixes = slices.Compact(o.Prefixes)
	return nil
}

// selectedTiers returns the tiers to run in registry order, each once.
func (o *Options) selectedTiers() []string {
	if len(o.Tiers) == 0 {
		return tiers.Names()
	}
	var out []string
	for _, n := range tiers.Names() {
		if slices.Contains(o.Tiers, n) {
			out = append(out, n)
		}
	}
	return out
}

// directions returns the directions to run, load first, each once;
// none given means load.
func (o *Options) directions() []tiers.Direction {
	return tiers.RunOrder(o.Directions)
}

// Settings renders the options for the manifest.
func (o *Options) Settings() map[string]string {
	join := func(xs []string) string { return strings.Join(xs, ",") }
	var ls, cs, ps, ds []string
	for _, l := range o.Layouts {
		ls = append(ls, string(l))
	}
	for _, c := range o.Copy {
		cs = append(cs, string(c))
	}
	for _, p := range o.Prefixes {
		ps = append(ps, strconv.Itoa(p))
	}
	for _, d := range o.directions() {
		ds = append(ds, string(d))
	}
	g := o.Geometry
	m := map[string]string{
		"tiers": join(o.selectedTiers()), "model": g.Model, "block_size": strconv.Itoa(g.BlockTokens),
		"layouts": join(ls), "prefixes": join(ps), "copy": join(cs), "directions": join(ds),
		"reps": strconv.Itoa(o.Policy.Reps), "warmup": strconv.Itoa(o.Policy.Warmup),
		"budget": o.Policy.Budget.String(), "seed": strconv.FormatUint(o.Seed, 10),
		"bytes_per_token": strconv.FormatInt(g.BytesPerToken(), 10),
		"block_bytes":     strconv.FormatInt(g.BlockBytes(), 10),
	}
	maps.Copy(m, g.ShardSettings())
	for _, name := range o.selectedTiers() {
		if to := o.TierOptions[name]; to != nil {
			maps.Copy(m, to.Settings())
		}
	}
	return m
}
