package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// SweepSummaryKeys are the columns sweep_summary.csv groups by.
var SweepSummaryKeys = []string{"tier", "layout", "copy", "backend", "transport", "prefix_tokens", "path", "src_mem"}

// DefaultPrefixes are the prefix lengths a sweep measures by default.
var DefaultPrefixes = []int{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10}

// ErrMeasurementFailed is wrapped by Sweep's error when the sweep ran to
// the end but some rows are errors (a data mismatch, a failed fetch).
var ErrMeasurementFailed = errors.New("measurements failed")

// SweepOptions are the resolved options of a tier sweep.
type SweepOptions struct {
	Backend     string   // auto | host | cuda
	Tiers       []string // registry names; empty means every registered tier
	Model       string   // preset name; "" with ModelConfig ""  means kv.DefaultModel
	ModelConfig string   // path of a Hugging Face config.json (exclusive with Model)
	BlockTokens int      // tokens per KV block
	Layouts     []kv.Layout
	Prefixes    []int // tokens; sorted ascending by Validate
	Reps        int   // measured samples per configuration
	Warmup      int   // discarded samples per configuration
	Seed        uint64
	Copy        []tiers.CopyMode // for tiers that move bytes
	HostMem     tiers.MemKind    // pinned | pageable
	GPU         int
	NUMA        int // -1: leave placement to the kernel
	Peer        string
	Transport   string // tcp | verbs
	Conns       int
	RDMADevice  string
	GIDIndex    int
	// Budget bounds the time of one configuration: fewer reps when the
	// warm-up shows they would not fit, a skipped row when one rep would
	// not.
	Budget time.Duration
	// SysRoot is the root of procfs reads (free memory); "" means "/".
	SysRoot string
	// Libs names the native libraries to load.
	Libs system.Libraries

	// Opened is a backend already opened by the caller (the CLI opens it
	// before creating the results directory so that a backend that cannot
	// open is reported without writing anything); nil makes Sweep open
	// Backend itself. Sweep does not close it.
	Opened tiers.Backend
	// Fallback lists why backends tried before Opened did not open.
	Fallback []string

	geom kv.Geometry
}

// DefaultSweepOptions returns the options of a plain `kvtier sweep`.
func DefaultSweepOptions() SweepOptions {
	return SweepOptions{
		Backend: "auto", BlockTokens: kv.DefaultBlockTokens, Layouts: kv.Layouts(),
		Prefixes: slices.Clone(DefaultPrefixes), Reps: 5, Warmup: 2, Seed: 1,
		Copy: tiers.CopyModes(), HostMem: tiers.Pinned, NUMA: -1, Transport: "tcp",
		Conns: 4, GIDIndex: -1, Budget: 30 * time.Second,
	}
}

// Validate checks every option, reporting every problem at once (joined
// errors, each naming its flag), and resolves the model's geometry and
// the order of the prefixes.
func (o *SweepOptions) Validate() error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
	}
	if o.Backend != "auto" && !slices.Contains(tiers.BackendNames(), o.Backend) {
		bad("backend", "unknown backend %q (known: auto, %s)", o.Backend, strings.Join(tiers.BackendNames(), ", "))
	}
	for _, t := range o.Tiers {
		if _, err := tiers.Lookup(t); err != nil {
			bad("tiers", "%v", err)
		}
	}
	if o.BlockTokens <= 0 {
		bad("block-size", "must be positive, got %d", o.BlockTokens)
	}
	switch {
	case o.Model != "" && o.ModelConfig != "":
		bad("model-config", "give --model or --model-config, not both")
	case o.ModelConfig != "":
		g, err := kv.ParseConfig(o.ModelConfig)
		if err != nil {
			bad("model-config", "%v", err)
		}
		o.geom = g
	default:
		name := o.Model
		if name == "" {
			name = kv.DefaultModel
		}
		g, err := kv.LookupModel(name)
		if err != nil {
			bad("model", "%v", err)
		}
		o.geom = g
	}
	if o.BlockTokens > 0 && o.geom.Layers > 0 {
		o.geom.BlockTokens = o.BlockTokens
		if err := o.geom.Validate(); err != nil {
			bad("model", "%v", err)
		}
	}
	if len(o.Layouts) == 0 {
		bad("layout", "no layout given")
	}
	for _, l := range o.Layouts {
		if _, err := kv.ParseLayout(string(l)); err != nil {
			bad("layout", "%v", err)
		}
	}
	if len(o.Prefixes) == 0 {
		bad("prefix", "no prefix length given")
	}
	for _, p := range o.Prefixes {
		if p <= 0 {
			bad("prefix", "prefix length must be positive, got %d", p)
		}
	}
	sort.Ints(o.Prefixes)
	o.Prefixes = slices.Compact(o.Prefixes)
	if o.Reps < 1 {
		bad("reps", "must be at least 1, got %d", o.Reps)
	}
	if o.Warmup < 0 {
		bad("warmup", "must not be negative, got %d", o.Warmup)
	}
	if len(o.Copy) == 0 {
		bad("copy", "no copy mode given")
	}
	for _, m := range o.Copy {
		if _, err := tiers.ParseCopyMode(string(m)); err != nil {
			bad("copy", "%v", err)
		}
	}
	if o.HostMem != tiers.Pinned && o.HostMem != tiers.Pageable {
		bad("host-mem", "want pinned or pageable, got %q", o.HostMem)
	}
	if o.GPU < 0 {
		bad("gpu", "must not be negative, got %d", o.GPU)
	}
	if o.NUMA < -1 {
		bad("numa", "want a node number or -1, got %d", o.NUMA)
	}
	if o.Transport != "tcp" && o.Transport != "verbs" {
		bad("transport", "want tcp or verbs, got %q", o.Transport)
	}
	if o.Conns < 1 {
		bad("conns", "must be at least 1, got %d", o.Conns)
	}
	if o.GIDIndex < -1 {
		bad("gid-index", "want an index or -1, got %d", o.GIDIndex)
	}
	if o.Budget <= 0 {
		bad("budget", "must be positive, got %s", o.Budget)
	}
	return errors.Join(errs...)
}

// Geometry returns the model geometry Validate resolved.
func (o *SweepOptions) Geometry() kv.Geometry { return o.geom }

// Settings renders the options for the manifest.
func (o *SweepOptions) Settings() map[string]string {
	join := func(xs []string) string { return strings.Join(xs, ",") }
	var ls, cs, ps []string
	for _, l := range o.Layouts {
		ls = append(ls, string(l))
	}
	for _, c := range o.Copy {
		cs = append(cs, string(c))
	}
	for _, p := range o.Prefixes {
		ps = append(ps, strconv.Itoa(p))
	}
	return map[string]string{
		"backend": o.Backend, "tiers": join(o.selectedTiers()), "model": o.geom.Model,
		"block_size": strconv.Itoa(o.BlockTokens), "layouts": join(ls), "prefixes": join(ps),
		"reps": strconv.Itoa(o.Reps), "warmup": strconv.Itoa(o.Warmup), "seed": strconv.FormatUint(o.Seed, 10),
		"copy": join(cs), "host_mem": string(o.HostMem), "gpu": strconv.Itoa(o.GPU), "numa": strconv.Itoa(o.NUMA),
		"peer": o.Peer, "transport": o.Transport, "conns": strconv.Itoa(o.Conns), "rdma_device": o.RDMADevice,
		"gid_index": strconv.Itoa(o.GIDIndex), "budget": o.Budget.String(),
		"bytes_per_token": strconv.FormatInt(o.geom.BytesPerToken(), 10),
		"block_bytes":     strconv.FormatInt(o.geom.BlockBytes(), 10),
	}
}

func (o *SweepOptions) selectedTiers() []string {
	if len(o.Tiers) == 0 {
		return tiers.Names()
	}
	var out []string
	for _, n := range tiers.Names() { // registry order, each once
		if slices.Contains(o.Tiers, n) {
			out = append(out, n)
		}
	}
	return out
}

// Sweep runs the tier sweep: for every layout, selected tier (in registry
// order), copy mode (tiers that move bytes only) and prefix length, a
// warm-up and measured samples, written to sweep.csv in out as they are
// measured. It stops at once when ctx is cancelled and returns ctx's error;
// rows already written stay. opts must have passed Validate.
func Sweep(ctx context.Context, opts SweepOptions, out *Output, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	if opts.geom.Layers == 0 {
		if err := opts.Validate(); err != nil {
			return err
		}
	}
	b := opts.Opened
	if b == nil {
		var why []string
		var err error
		b, why, err = tiers.OpenBackend(ctx, opts.Backend, tiers.BackendConfig{GPU: opts.GPU, NUMA: opts.NUMA, Log: log, Libs: opts.Libs})
		if err != nil {
			return fmt.Errorf("--backend %s: %w", opts.Backend, err)
		}
		defer b.Close()
		opts.Fallback = append(opts.Fallback, why...)
	}
	for _, w := range opts.Fallback {
		out.Manifest.Warnings = append(out.Manifest.Warnings, "backend "+w)
	}
	settings := opts.Settings()
	settings["backend_used"] = b.Name()
	settings["device"] = b.Device()
	out.Manifest.Settings = settings
	if err := out.WriteManifest(); err != nil {
		return err
	}
	sink, err := out.CSV(results.SweepFile, SweepSummaryKeys, results.SweepColumns...)
	if err != nil {
		return err
	}
	s := &sweeper{opts: opts, g: opts.geom, b: b, sink: sink, log: log}
	root := opts.SysRoot
	if root == "" {
		root = "/"
	}
	s.root = root
	for li, layout := range opts.Layouts {
		for _, name := range opts.selectedTiers() {
			spec, _ := tiers.Lookup(name)
			if !spec.Moves && li > 0 {
				continue // nothing moves, so the layout does not matter: once is enough
			}
			modes := opts.Copy
			if !spec.Moves {
				modes = []tiers.CopyMode{""}
			}
			for _, mode := range modes {
				if err := s.config(ctx, spec, layout, mode); err != nil {
					return err
				}
			}
		}
	}
	if s.failed > 0 {
		return fmt.Errorf("%d rows are errors (see the reason column of %s): %w", s.failed, results.SweepFile, ErrMeasurementFailed)
	}
	return nil
}

// A sweeper holds the state of one Sweep.
type sweeper struct {
	opts   SweepOptions
	g      kv.Geometry
	b      tiers.Backend
	sink   *results.CSV
	log    io.Writer
	root   string
	failed int
}

// base returns a row with the columns every row of a configuration shares.
func (s *sweeper) base(spec tiers.Spec, layout kv.Layout, mode tiers.CopyMode, attrs map[string]string, p tiers.Prefix) results.Row {
	r := results.NewRow("sweep")
	r.Backend = s.b.Name()
	r.Tier = spec.Name
	r.Model = s.g.Model
	r.PrefixTokens = int64(p.Tokens)
	r.Blocks = int64(p.Blocks)
	r.Set("seed", s.opts.Seed)
	r.Set("device", s.b.Device())
	if spec.Moves {
		r.Layout = string(layout)
		r.ChunkBytes = s.g.ChunkBytes(layout)
		r.Bytes = int64(p.Blocks) * s.g.BlockBytes()
		r.Set("copy", string(mode))
		r.Set("dst_mem", string(tiers.Device))
	}
	// Timing and holding are the timer's facts: a HeldTimer (the cuda
	// backend's) times with device events and says per sample whether the
	// stream was held; other timers read the monotonic clock and hold
	// nothing. measure overwrites held with the sample's own answer.
	if _, ok := s.b.Timer(spec.Timing).(tiers.HeldTimer); ok {
		r.Set("timing", "events")
	} else {
		r.Set("timing", "clock")
	}
	r.Set("held", false)
	known := map[string]bool{}
	for _, c := range results.SweepColumns {
		known[c] = true
	}
	for k, v := range attrs {
		switch {
		case k == "transport":
			r.Transport = v
		case known[k]:
			r.Extra[k] = v
		}
	}
	if r.Transport == "" {
		r.Transport = "memcpy"
		if !spec.Moves {
			r.Transport = "compute"
		}
	}
	return r
}

func (s *sweeper) write(r results.Row) error {
	if r.Status == results.StatusError {
		s.failed++
	}
	if err := s.sink.Write(r); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

func (s *sweeper) prefix(tokens int) tiers.Prefix {
	return tiers.Prefix{Tokens: tokens, Blocks: s.g.Blocks(tokens)}
}

// skipAll writes one skipped row per prefix.
func (s *sweeper) skipAll(spec tiers.Spec, layout kv.Layout, mode tiers.CopyMode, attrs map[string]string, prefixes []int, reason string) error {
	for _, tok := range prefixes {
		r := s.base(spec, layout, mode, attrs, s.prefix(tok))
		r.Skip(reason)
		if err := s.write(r); err != nil {
			return err
		}
	}
	s.progress(spec, layout, mode, "all prefixes", "skipped: "+reason)
	return nil
}

func (s *sweeper) progress(spec tiers.Spec, layout kv.Layout, mode tiers.CopyMode, prefix, what string) {
	l, m := string(layout), string(mode)
	if !spec.Moves {
		l, m = "-", "-"
	}
	fmt.Fprintf(s.log, "sweep: %-9s %-9s %-10s %-12s %s\n", spec.Name, l, m, prefix, what)
}

// config measures one tier, layout and copy mode over every prefix.
func (s *sweeper) config(ctx context.Context, spec tiers.Spec, layout kv.Layout, mode tiers.CopyMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	prefixes := s.opts.Prefixes
	env := tiers.Env{
		Backend: s.b, Geometry: s.g, Layout: layout, Copy: mode, HostMem: s.opts.HostMem, Seed: s.opts.Seed,
		Peer: s.opts.Peer, Transport: s.opts.Transport, Conns: s.opts.Conns, RDMADevice: s.opts.RDMADevice,
		GIDIndex: s.opts.GIDIndex, Log: s.log, Libs: s.opts.Libs,
	}
	if !spec.Moves {
		env.Layout, env.Copy = kv.Layerwise, ""
	}
	tier := spec.New(env)
	defer tier.Close()
	if reason := tier.Available(); reason != "" {
		return s.skipAll(spec, layout, mode, tier.Attrs(), prefixes, reason)
	}
	if spec.Moves && !slices.Contains(s.b.CopyModes(), mode) {
		return s.skipAll(spec, layout, mode, tier.Attrs(), prefixes, tiers.UnsupportedModeReason(mode))
	}

	// Prefixes whose pools would not fit in free memory are skipped.
	fit := prefixes
	if sz, ok := tier.(tiers.Sizer); ok {
		if avail, err := system.MemAvailable(s.root); err == nil {
			fit = nil
			var tooBig []int
			for _, tok := range prefixes {
				need := sz.SetupBytes(s.g.Blocks(tok))
				if float64(need) > 0.9*float64(avail) {
					r := s.base(spec, layout, mode, tier.Attrs(), s.prefix(tok))
					r.Skip(fmt.Sprintf("needs %s, %s available", sizeText(need), sizeText(avail)))
					if err := s.write(r); err != nil {
						return err
					}
					tooBig = append(tooBig, tok)
					continue
				}
				fit = append(fit, tok)
			}
			if len(tooBig) > 0 {
				s.progress(spec, layout, mode, units.FormatTokens(tooBig[0])+"+", fmt.Sprintf("skipped: pools need more than the %s available", sizeText(avail)))
			}
		} else {
			fmt.Fprintf(s.log, "kvtier: warning: free memory unknown, not checked: %v\n", err)
		}
	}
	if len(fit) == 0 {
		return nil
	}
	maxBlocks := s.g.Blocks(fit[len(fit)-1])
	if err := tier.Setup(ctx, maxBlocks); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, tok := range fit {
			r := s.base(spec, layout, mode, tier.Attrs(), s.prefix(tok))
			r.Fail(fmt.Errorf("setup: %w", err))
			if err := s.write(r); err != nil {
				return err
			}
		}
		s.progress(spec, layout, mode, "all prefixes", "error: setup: "+err.Error())
		return nil
	}
	attrs := tier.Attrs()

	// last is the previous prefix's measured p50 and its amount of work,
	// from which a larger prefix's time is estimated.
	var lastSec, lastWork float64
	work := func(p tiers.Prefix) float64 {
		if spec.Moves {
			return float64(p.Blocks) * float64(s.g.BlockBytes())
		}
		return tier.Work(p)
	}
	// Calibrate so that a first prefix far over the budget is not run:
	// compute tiers by the backend's GEMM rate, tiers that move bytes by
	// one block when the smallest prefix is larger (it costs little).
	if !spec.Moves {
		if rate, err := s.gemmRate(ctx); err == nil && rate > 0 {
			lastSec, lastWork = 1, rate
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
	} else if first := s.prefix(fit[0]); first.Blocks > 1 {
		probe := tiers.Prefix{Tokens: s.g.BlockTokens, Blocks: 1}
		if sec, err := s.sample(ctx, spec, tier, probe); err == nil && sec > 0 {
			lastSec, lastWork = sec, work(probe)
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	budget := s.opts.Budget.Seconds()
	for _, tok := range fit {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := s.prefix(tok)
		if lastSec > 0 && lastWork > 0 {
			if est := lastSec * work(p) / lastWork; est > budget {
				r := s.base(spec, layout, mode, attrs, p)
				if !spec.Moves {
					r.Set("flops", work(p))
				}
				reason := fmt.Sprintf("estimated %.3g s per rep exceeds --budget %s", est, s.opts.Budget)
				r.Skip(reason)
				if err := s.write(r); err != nil {
					return err
				}
				s.progress(spec, layout, mode, units.FormatTokens(tok), "skipped: "+reason)
				continue
			}
		}
		sec, err := s.measure(ctx, spec, layout, mode, tier, attrs, p, work(p))
		if err != nil {
			return err
		}
		if sec > 0 {
			lastSec, lastWork = sec, work(p)
		}
	}
	return nil
}

// sizeText renders a memory size for a reason: GiB with one decimal from
// 1 GiB on, as in "needs 12.5 GiB, 3.1 GiB available".
func sizeText(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return units.FormatBytes(n)
}

// gemmRate measures the FLOP/s of the backend on one GEMM shaped like a
// projection of the model (512 tokens × hidden × hidden), the second of
// two runs so that scratch allocation stays out.
func (s *sweeper) gemmRate(ctx context.Context) (float64, error) {
	op := kv.GEMM{Name: "calibrate", M: 512, N: s.g.Hidden, K: s.g.Hidden, Batch: 1}
	var sec float64
	for range 2 {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		t := s.b.Timer(tiers.Queued)
		if err := t.Start(); err != nil {
			return 0, err
		}
		if err := s.b.GEMMs([]kv.GEMM{op}); err != nil {
			t.Stop()
			return 0, err
		}
		var err error
		if sec, err = t.Stop(); err != nil {
			return 0, err
		}
	}
	if sec <= 0 {
		return 0, errors.New("calibration GEMM took no time")
	}
	return op.FLOPs() / sec, nil
}

// sample times one Fetch of p and returns its seconds.
func (s *sweeper) sample(ctx context.Context, spec tiers.Spec, tier tiers.Tier, p tiers.Prefix) (float64, error) {
	sec, _, err := s.sampleHeld(ctx, spec, tier, p)
	return sec, err
}

// sampleHeld is sample that also reports whether the backend held its
// stream until the whole fetch was queued (false where it cannot say).
func (s *sweeper) sampleHeld(ctx context.Context, spec tiers.Spec, tier tiers.Tier, p tiers.Prefix) (float64, bool, error) {
	t := s.b.Timer(spec.Timing)
	if err := t.Start(); err != nil {
		return 0, false, fmt.Errorf("timer start: %w", err)
	}
	ferr := tier.Fetch(ctx, p)
	sec, err := t.Stop()
	if ferr != nil {
		return 0, false, fmt.Errorf("fetch: %w", ferr)
	}
	if err != nil {
		return 0, false, fmt.Errorf("timer stop: %w", err)
	}
	held := false
	if h, ok := t.(tiers.HeldTimer); ok {
		held = h.Held()
	}
	return sec, held, nil
}

// measure runs the warm-up and the measured reps of one prefix and writes
// their rows. It returns the p50 of the measured reps (0 when none
// succeeded); errors are only those that stop the sweep.
func (s *sweeper) measure(ctx context.Context, spec tiers.Spec, layout kv.Layout, mode tiers.CopyMode, tier tiers.Tier, attrs map[string]string, p tiers.Prefix, work float64) (float64, error) {
	label := units.FormatTokens(p.Tokens)
	fail := func(rep int, err error) error {
		r := s.base(spec, layout, mode, attrs, p)
		r.Rep = rep
		r.Fail(err)
		s.progress(spec, layout, mode, label, "error: "+err.Error())
		return s.write(r)
	}
	budget := s.opts.Budget.Seconds()
	var warm float64
	for w := 0; w < s.opts.Warmup; w++ {
		sec, err := s.sample(ctx, spec, tier, p)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if err != nil {
			return 0, fail(0, fmt.Errorf("warm-up: %w", err))
		}
		warm = sec
		if sec*float64(w+2) > budget {
			break // the warm-up itself would eat the budget
		}
	}
	reps := s.opts.Reps
	if warm > 0 {
		reps = min(reps, max(1, int(budget/warm)))
	}
	scrub, _ := tier.(tiers.Scrubber)
	var secs []float64
	for rep := 0; rep < reps; rep++ {
		verify := spec.Moves && (rep == 0 || rep == reps-1)
		if verify && scrub != nil {
			if err := scrub.Scrub(p); err != nil {
				return 0, fail(rep, fmt.Errorf("scrub: %w", err))
			}
		}
		sec, held, err := s.sampleHeld(ctx, spec, tier, p)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		r := s.base(spec, layout, mode, attrs, p)
		r.Rep = rep
		r.Set("held", held)
		if err != nil {
			if err := fail(rep, err); err != nil {
				return 0, err
			}
			continue
		}
		r.SetTime(sec)
		if !spec.Moves && work > 0 {
			r.Set("flops", work)
			r.Set("tflops", work/sec/1e12)
		}
		if l, err := strconv.ParseFloat(r.Get("link_gbps"), 64); err == nil && l > 0 && !math.IsNaN(r.GBps) {
			r.Set("link_frac", r.GBps/l)
		}
		if verify {
			if err := tier.Verify(p); err != nil {
				r.Set("verified", false)
				r.Fail(fmt.Errorf("verify: %w", err))
				fmt.Fprintf(s.log, "kvtier sweep: VERIFICATION FAILED: %s %s %s %s rep %d: %v\n", spec.Name, layout, mode, label, rep, err)
			} else {
				r.Set("verified", true)
			}
		}
		if r.Status == results.StatusOK {
			secs = append(secs, sec)
		}
		if err := s.write(r); err != nil {
			return 0, err
		}
	}
	if len(secs) == 0 {
		return 0, nil
	}
	st := results.Describe(secs)
	what := fmt.Sprintf("p50 %9.3f ms", st.P50*1e3)
	if spec.Moves {
		what += fmt.Sprintf("  %8.2f GB/s", float64(p.Blocks)*float64(s.g.BlockBytes())/st.P50/1e9)
	} else if work > 0 {
		what += fmt.Sprintf("  %8.4f TFLOP/s", work/st.P50/1e12)
	}
	what += fmt.Sprintf("  n=%d", len(secs))
	if reps < s.opts.Reps {
		what += fmt.Sprintf(" (%d of %d reps: --budget %s)", reps, s.opts.Reps, s.opts.Budget)
	}
	s.progress(spec, layout, mode, label, what)
	return st.P50, nil
}
