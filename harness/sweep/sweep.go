package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// Run runs the tier sweep on backend b: for every direction (loads
// first), layout, selected tier (in registry order), copy mode (tiers
// that move bytes only), variant of the tier's options (tiers.Varier)
// and prefix length, the Sampler's
// warm-up and measured samples, written to sweep.csv in out as they are
// measured. Tiers keep large files in out's directory (Env.Scratch) and
// share what they make across configurations (Env.Shared) until Run
// returns. It returns at once when ctx is
// cancelled, with ctx's error; rows already written stay. Rows that are
// errors do not stop it: out counts them. opts must have passed
// Validate.
func Run(ctx context.Context, opts Options, b tiers.Backend, out *harness.Output, log io.Writer) error {
	settings := opts.Settings()
	settings["backend_used"] = b.Name()
	settings["device"] = b.Device()
	if g, ok := b.(gpuOrdinal); ok {
		settings[results.ColGPU] = strconv.Itoa(g.GPU())
	}
	return run(ctx, opts, settings, &sweeper{b: b}, out, log)
}

// run writes the manifest with settings and runs the sweep s, whose
// backends are set.
func run(ctx context.Context, opts Options, settings map[string]string, s *sweeper, out *harness.Output, log io.Writer) error {
	out.Manifest.Settings = settings
	if err := out.WriteManifest(); err != nil {
		return err
	}
	sink, err := out.Open(Suite.Main())
	if err != nil {
		return err
	}
	s.opts, s.log, s.scratch, s.shared, s.settings = opts, log, out.Dir, tiers.NewShared(), settings
	s.sampler = &harness.Sampler{Suite: Suite.Name, Sink: sink, Log: log, Policy: opts.Policy}
	defer func() {
		if err := s.shared.Close(); err != nil {
			fmt.Fprintf(log, "kvtier: warning: %v\n", err)
		}
	}()
	harness.ProgressOf(log).PlanWeights(s.preflight())
	for _, dir := range opts.directions() {
		for _, k := range s.configs(dir) {
			if err := s.config(ctx, k.spec, k.layout, k.mode, dir, k.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// A configKey is one configuration of a direction: tier, layout, copy
// mode and variant; each is measured at every prefix.
type configKey struct {
	spec   tiers.Spec
	layout kv.Layout
	mode   tiers.CopyMode
	v      tiers.Variant
}

// configs lists the configurations of one direction in the order they
// run: layout, tier (registry order), copy mode (tiers that move bytes
// only), variant.
func (s *sweeper) configs(dir tiers.Direction) []configKey {
	var out []configKey
	for li, layout := range s.opts.Layouts {
		for _, name := range s.opts.selectedTiers() {
			spec, _ := tiers.Lookup(name)
			if !spec.Moves() && li > 0 {
				continue // nothing moves, so the layout does not matter: once is enough
			}
			modes := s.opts.Copy
			if !spec.Moves() {
				modes = []tiers.CopyMode{""}
			}
			for _, mode := range modes {
				for _, v := range tiers.VariantsFor(s.opts.TierOptions[name], dir) {
					out = append(out, configKey{spec, layout, mode, v})
				}
			}
		}
	}
	return out
}

// A sweeper holds the state of one Run.
type sweeper struct {
	opts    Options
	b       tiers.Backend
	all     []tiers.Backend // --gpu all: one backend per GPU, b the first; nil otherwise
	log     io.Writer
	sampler *harness.Sampler
	scratch string
	shared  *tiers.Shared
	// settings are the manifest's (written again when the run closes):
	// what a tier decides at set-up, as why its RDMA device was picked,
	// is recorded there too.
	settings map[string]string
}

// newConfig builds the tier of one configuration.
func (s *sweeper) newConfig(b tiers.Backend, spec tiers.Spec, layout kv.Layout, mode tiers.CopyMode, dir tiers.Direction, v tiers.Variant) Config {
	env := tiers.Env{Backend: b, Geometry: s.opts.Geometry, Layout: layout, Copy: mode, Direction: dir,
		Seed: s.opts.Seed, Options: v.Options, Root: s.opts.Root, Log: s.log,
		Scratch: s.scratch, Shared: s.shared}
	if !spec.Moves() {
		env.Layout, env.Copy = kv.Layerwise, ""
	}
	return Config{Backend: b, Spec: spec, Tier: spec.New(env), Layout: env.Layout, Copy: mode,
		Direction: dir, Variant: v.Name, Geom: s.opts.Geometry, Seed: s.opts.Seed}
}

// skipAll writes one skipped row per prefix, a reason preflight said.
func (s *sweeper) skipAll(c Config, prefixes []int, reason string) error {
	for _, tok := range prefixes {
		if err := s.sampler.SkipSaid(s.skipCase(c, Prefix(c.Geom, tok)), reason); err != nil {
			return err
		}
	}
	return nil
}

// config measures one tier, layout and copy mode over every prefix.
func (s *sweeper) config(ctx context.Context, spec tiers.Spec, layout kv.Layout, mode tiers.CopyMode, dir tiers.Direction, v tiers.Variant) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := s.newConfig(s.b, spec, layout, mode, dir, v)
	defer c.Tier.Close()
	if reason := s.cannotRun(c); reason != "" {
		return s.skipAll(c, s.opts.Prefixes, reason)
	}
	fit, err := s.fitting(c)
	if err != nil || len(fit) == 0 {
		return err
	}
	if s.all != nil {
		return s.group(ctx, c, v, fit)
	}
	s.waitSetup(c, fit)
	err = c.Tier.Setup(ctx, c.Geom.Blocks(fit[len(fit)-1]))
	harness.ProgressOf(s.log).Wait("")
	if err != nil {
		return s.failSetup(ctx, c.Case, fit, err)
	}
	if why := c.Tier.Attrs()["device_reason"]; why != "" {
		s.settings["rdma_device_reason"] = why
	}
	return s.prefixes(ctx, c, fit, single{s, c})
}

// waitSetup says in the run's progress that the configuration c waits
// for its tier's set-up for the largest prefix of fit.
func (s *sweeper) waitSetup(c Config, fit []int) {
	what := c.Spec.Prepares
	if what == "" {
		what = "its pools"
	}
	harness.ProgressOf(s.log).Wait(fmt.Sprintf("the %s tier's set-up (%s, %d tokens)", c.Spec.Name, what, fit[len(fit)-1]))
}

// failSetup writes an error row for each prefix of fit, whose rows
// caseOf makes, after a failed set-up.
func (s *sweeper) failSetup(ctx context.Context, caseOf func(tiers.Prefix) harness.Case, fit []int, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, tok := range fit {
		if err := s.sampler.Fail(caseOf(Prefix(s.opts.Geometry, tok)), 0, fmt.Errorf("setup: %w", err)); err != nil {
			return err
		}
	}
	return nil
}

// A measurer measures one prefix of a set-up configuration: on one GPU
// (single) or on every GPU at once (group).
type measurer interface {
	// Case is the case of p whose row a skipped row takes.
	Case(p tiers.Prefix) harness.Case
	// Measure measures p and writes its rows.
	Measure(ctx context.Context, p tiers.Prefix) (harness.Result, error)
}

// single measures a configuration on one backend.
type single struct {
	s *sweeper
	c Config
}

func (m single) Case(p tiers.Prefix) harness.Case { return m.c.Case(p) }

func (m single) Measure(ctx context.Context, p tiers.Prefix) (harness.Result, error) {
	return m.s.sampler.Measure(ctx, m.c.Case(p))
}

// fitting writes a skipped row for each prefix whose set-up would not
// fit (its pools in free host memory, tiers.Sizer; its other needs,
// tiers.Fitter) and returns the others.
func (s *sweeper) fitting(c Config) ([]int, error) {
	checkMem := true
	var fit []int
	for _, tok := range s.opts.Prefixes {
		blocks := c.Geom.Blocks(tok)
		if reason := limitReason(c, tok); reason != "" { // preflight counted it
			if err := s.sampler.SkipSaid(s.skipCase(c, Prefix(c.Geom, tok)), reason); err != nil {
				return nil, err
			}
			continue
		}
		reason := ""
		if sz, ok := c.Tier.(tiers.Sizer); ok && checkMem {
			r, err := harness.HostFitReason(s.opts.Root, sz.SetupBytes(blocks)*int64(max(len(s.all), 1)))
			if err != nil {
				fmt.Fprintf(s.log, "kvtier: warning: %v\n", err)
				checkMem = false
			}
			reason = r
		}
		if f, ok := c.Tier.(tiers.Fitter); ok && reason == "" {
			reason = f.FitReason(blocks)
		}
		if reason != "" {
			if err := s.sampler.Skip(s.skipCase(c, Prefix(c.Geom, tok)), reason); err != nil {
				return nil, err
			}
			continue
		}
		fit = append(fit, tok)
	}
	return fit, nil
}

// limitReason is why prefix tok of c is over a fixed limit of the tier's
// options (tiers.Limiter, --disk-max), known before anything runs; ""
// when it is within them.
func limitReason(c Config, tok int) string {
	if l, ok := c.Tier.(tiers.Limiter); ok {
		return l.LimitReason(c.Geom.Blocks(tok))
	}
	return ""
}

// An estimator extrapolates a prefix's time per rep from the last
// measured one, in proportion to the work (bytes or FLOPs).
type estimator struct {
	sec, work float64
}

func (e estimator) estimate(work float64) float64 {
	if e.sec <= 0 || e.work <= 0 {
		return 0
	}
	return e.sec * work / e.work
}

// work is the amount a fetch of p does: bytes moved, or FLOPs.
func work(c Config, p tiers.Prefix) float64 {
	if c.Spec.Moves() {
		return float64(p.Blocks) * float64(c.Geom.BlockBytes())
	}
	return c.Tier.Work(p)
}

// prefixes measures each prefix of a set-up configuration, skipping
// those whose estimated time per rep exceeds the budget.
func (s *sweeper) prefixes(ctx context.Context, c Config, fit []int, m measurer) error {
	est, err := s.calibrate(ctx, c, Prefix(c.Geom, fit[0]))
	if err != nil {
		return err
	}
	budget := s.opts.Policy.Budget
	for _, tok := range fit {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := Prefix(c.Geom, tok)
		hc := m.Case(p)
		if sec := est.estimate(work(c, p)); overBudget(sec, budget) {
			if !c.Spec.Moves() {
				hc.Row.Set("flops", work(c, p))
			}
			if err := s.sampler.Skip(hc, OverBudget(sec, budget)); err != nil {
				return err
			}
			continue
		}
		res, err := m.Measure(ctx, p)
		if err != nil {
			return err
		}
		if res.Seconds.N > 0 {
			est = estimator{res.Seconds.P50, work(c, p)}
		}
	}
	return nil
}

// overBudget reports whether sec seconds per rep exceed budget (none
// when budget is 0): the one test behind the run's skip, preflight's
// weights and its likely skips.
func overBudget(sec float64, budget time.Duration) bool {
	return budget > 0 && sec > budget.Seconds()
}

// OverBudget is the reason of a configuration skipped because its
// estimated sec per rep exceeds the budget: the sweep's and go test
// -bench's, in the same words.
func OverBudget(sec float64, budget time.Duration) string {
	return fmt.Sprintf("estimated %s per rep exceeds the budget of %s", units.FormatSeconds(sec), budget)
}

// calibrate returns a first estimator so that a first prefix far over
// the budget is not run: compute tiers by the backend's GEMM rate, tiers
// that move bytes by one block when the first prefix is larger.
func (s *sweeper) calibrate(ctx context.Context, c Config, first tiers.Prefix) (estimator, error) {
	if !c.Spec.Moves() {
		rate, err := GEMMRate(ctx, s.b, s.sampler, c.Geom)
		if ctx.Err() != nil {
			return estimator{}, ctx.Err()
		}
		if err != nil || rate <= 0 {
			return estimator{}, nil
		}
		return estimator{1, rate}, nil
	}
	if first.Blocks <= 1 {
		return estimator{}, nil
	}
	one := tiers.Prefix{Tokens: c.Geom.BlockTokens, Blocks: 1}
	hc := c.Case(one)
	sec, _, err := s.sampler.Sample(ctx, &hc)
	if ctx.Err() != nil {
		return estimator{}, ctx.Err()
	}
	if err != nil {
		return estimator{}, nil
	}
	return estimator{sec, work(c, one)}, nil
}

// GEMMRate measures the FLOP/s of b on one GEMM shaped like a projection
// of the model (512 tokens × hidden × hidden), timed by sampler as every
// sample is: the second of two runs, so that scratch allocation stays
// out. A compute tier's time per rep is estimated from it before it runs.
func GEMMRate(ctx context.Context, b tiers.Backend, sampler *harness.Sampler, g kv.Geometry) (float64, error) {
	op := kv.GEMM{Name: "calibrate", M: 512, N: g.Hidden, K: g.Hidden, Batch: 1}
	c := harness.Case{Label: "GEMM calibration", Timer: b.Timer(tiers.Queued),
		Fetch: func(context.Context) error { return b.GEMMs([]kv.GEMM{op}) }}
	var sec float64
	for range 2 {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		var err error
		if sec, _, err = sampler.Sample(ctx, &c); err != nil {
			return 0, err
		}
	}
	if sec <= 0 {
		return 0, errors.New("calibration GEMM took no time")
	}
	return op.FLOPs() / sec, nil
}
