// Package bench runs kvtier's tiers and MB2 as Go benchmarks:
//
//	go test -run '^$' -bench . ./bench
//
// BenchmarkTiers loops over the tier registry, so a new tier appears here
// without edits; sub-benchmarks are named
// tier=host/layout=layerwise/copy=percopy/prefix=4096. BenchmarkTransfer
// reads from each peer of KVTIER_PEERS (an embedded loopback peer when
// unset), named peer=ADDR/layout=contiguous/size=16MiB. b.SetBytes makes
// Go print MB/s; GB/s (or TFLOP/s for recompute) is an extra metric. A
// configuration that cannot run here is skipped with the reason kvtier
// sweep gives, and says so in a line of its own whatever -v says
// ("--- SKIP: NAME/prefix=N: REASON", one per prefix, as the sweep has one
// row per prefix), which benchstat ignores and kvtier bench2csv turns into
// a status=skipped row. A compute tier whose estimated time per rep (its
// FLOPs over the backend's GEMM rate) exceeds KVTIER_BUDGET is skipped
// with its estimate, as the sweep skips it.
//
// Before the results the benchmarks print Go benchmark configuration
// lines (kvtier:, model:, gpu:, nic:, backend:, transport:, path:, ...)
// that say what a sweep's or a transfer's columns say, so benchstat
// splits by them and kvtier bench2csv --out DIR turns the output into
// DIR/sweep.csv and DIR/transfer.csv that kvtier report and plot label as
// they label kvtier sweep and kvtier transfer (labels.go).
//
// Environment (read by this package only; the kvtier binary has flags):
//
//	KVTIER_PREFIXES  prefix lengths (default 1k,4k)
//	KVTIER_TIERS     tiers to run (default every tier)
//	KVTIER_BUDGET    time budget per rep, as kvtier sweep's --budget
//	                 (default 30s; 0: none)
//	KVTIER_LAYOUTS   layouts (default layerwise,blockwise; transfer:
//	                 layerwise,blockwise,contiguous)
//	KVTIER_MODEL     preset name or config.json path (default qwen3-coder-30b-a3b)
//	KVTIER_BACKEND   auto, host or cuda (default auto)
//	KVTIER_DIRECTIONS load, store or both (default load); store
//	                 configurations run under direction=store
//	KVTIER_PEER      HOST:PORT of a kvtier serve peer for the remote tier
//	                 (started with --writable for stores)
//	KVTIER_PEERS     HOST:PORT,... of kvtier serve peers for BenchmarkTransfer
//	KVTIER_SIZES     transfer sizes (default 16MiB,256MiB)
//	KVTIER_TRANSPORT tcp or verbs (default tcp), KVTIER_CONNS (default 1),
//	                 KVTIER_RDMA_DEVICE, KVTIER_TOKEN: as kvtier transfer's flags
//	KVTIER_LIBCUDA, KVTIER_LIBCUBLAS, KVTIER_LIBCUFILE, KVTIER_LIBIBVERBS
//	                 other copies of the native libraries
//	KVTIER_OUT       also write one sweep row per sub-benchmark to this CSV
package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// benchConfig is the environment's configuration of the benchmarks.
type benchConfig struct {
	prefixes []int
	tiers    []string // empty: every tier
	layouts  []kv.Layout
	dirs     []tiers.Direction
	geom     kv.Geometry
	backend  string
	peer     string
	out      string
	budget   time.Duration
}

func loadConfig() (benchConfig, error) {
	var c benchConfig
	var err error
	if c.prefixes, err = units.ParseList(env("KVTIER_PREFIXES", "1k,4k"), units.ParseTokens); err != nil {
		return c, fmt.Errorf("KVTIER_PREFIXES: %w", err)
	}
	slices.Sort(c.prefixes)
	if t := env("KVTIER_TIERS", ""); t != "" {
		for name := range strings.SplitSeq(t, ",") {
			name = strings.TrimSpace(name)
			if _, err := tiers.Lookup(name); err != nil {
				return c, fmt.Errorf("KVTIER_TIERS: %w", err)
			}
			c.tiers = append(c.tiers, name)
		}
	}
	if c.layouts, err = units.ParseList(env("KVTIER_LAYOUTS", "layerwise,blockwise"), kv.ParseLayout); err != nil {
		return c, fmt.Errorf("KVTIER_LAYOUTS: %w", err)
	}
	if c.dirs, err = units.ParseList(env("KVTIER_DIRECTIONS", "load"), tiers.ParseDirection); err != nil {
		return c, fmt.Errorf("KVTIER_DIRECTIONS: %w", err)
	}
	if c.geom, err = loadModel(); err != nil {
		return c, err
	}
	if c.budget, err = time.ParseDuration(env("KVTIER_BUDGET", sweep.DefaultOptions().Policy.Budget.String())); err != nil {
		return c, fmt.Errorf("KVTIER_BUDGET: %w", err)
	}
	c.backend = env("KVTIER_BACKEND", "auto")
	c.peer = env("KVTIER_PEER", "")
	c.out = env("KVTIER_OUT", "")
	return c, nil
}

// loadModel returns the geometry of KVTIER_MODEL.
func loadModel() (kv.Geometry, error) {
	model := env("KVTIER_MODEL", kv.DefaultModel)
	var g kv.Geometry
	var err error
	if _, statErr := os.Stat(model); statErr == nil {
		g, err = kv.ParseConfig(model) // a config.json or a model directory
	} else if strings.HasSuffix(model, ".json") {
		g, err = kv.ParseConfig(model)
	} else {
		g, err = kv.LookupModel(model)
	}
	if err != nil {
		return g, fmt.Errorf("KVTIER_MODEL: %w", err)
	}
	return g, nil
}

// rows holds the last result of every sub-benchmark for KVTIER_OUT.
var (
	rowsMu sync.Mutex
	rows   = map[string]results.Row{}
	order  []string
)

func record(name string, r results.Row) {
	rowsMu.Lock()
	defer rowsMu.Unlock()
	if _, ok := rows[name]; !ok {
		order = append(order, name)
	}
	rows[name] = r
}

func TestMain(m *testing.M) {
	code := m.Run()
	if out := os.Getenv("KVTIER_OUT"); out != "" && len(order) > 0 {
		if err := writeRows(out); err != nil {
			fmt.Fprintf(os.Stderr, "bench: KVTIER_OUT: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func writeRows(path string) error {
	s, err := results.CreateCSV(path, sweep.Suite.Main().Names()...)
	if err != nil {
		return err
	}
	for _, name := range order {
		if err := s.Write(rows[name]); err != nil {
			s.Close()
			return err
		}
	}
	return s.Close()
}

func BenchmarkTiers(b *testing.B) {
	cfg, err := loadConfig()
	if err != nil {
		b.Fatal(err)
	}
	backend, why, err := tiers.OpenBackend(context.Background(), cfg.backend, tiers.BackendConfig{NUMA: -1, Log: os.Stderr,
		LibCUDA: os.Getenv("KVTIER_LIBCUDA"), LibCUBLAS: os.Getenv("KVTIER_LIBCUBLAS"),
		LibCUFile: os.Getenv("KVTIER_LIBCUFILE")})
	if err != nil {
		b.Fatalf("KVTIER_BACKEND=%s: %v", cfg.backend, err)
	}
	defer backend.Close()
	for _, w := range why {
		b.Logf("backend %s; using %s", w, backend.Name())
	}
	printRunLabels(cfg.geom, backend)
	for _, spec := range tiers.All() {
		if len(cfg.tiers) > 0 && !slices.Contains(cfg.tiers, spec.Name) {
			continue
		}
		b.Run("tier="+spec.Name, func(b *testing.B) {
			for _, dir := range cfg.dirs {
				if dir == tiers.Load {
					benchTier(b, cfg, backend, spec, dir)
					continue
				}
				b.Run("direction="+string(dir), func(b *testing.B) {
					if !spec.Has(dir) {
						skipPrefixes(b, cfg, spec.NoDirectionReason(dir))
					}
					benchTier(b, cfg, backend, spec, dir)
				})
			}
		})
	}
}

// benchTier runs every layout and copy mode of one tier in direction dir.
func benchTier(b *testing.B, cfg benchConfig, backend tiers.Backend, spec tiers.Spec, dir tiers.Direction) {
	if !spec.Moves() {
		benchVariants(b, cfg, backend, spec, kv.Layerwise, "", dir)
		return
	}
	for _, layout := range cfg.layouts {
		b.Run("layout="+string(layout), func(b *testing.B) {
			for _, mode := range tiers.CopyModes() {
				b.Run("copy="+string(mode), func(b *testing.B) {
					benchVariants(b, cfg, backend, spec, layout, mode, dir)
				})
			}
		})
	}
}

// benchVariants runs the configurations the tier's default options ask
// for (tiers.Varier), each under variant=NAME when there are several.
func benchVariants(b *testing.B, cfg benchConfig, backend tiers.Backend, spec tiers.Spec, layout kv.Layout, mode tiers.CopyMode, dir tiers.Direction) {
	var opts tiers.Options
	if spec.NewOptions != nil {
		opts = spec.NewOptions()
		if po, ok := opts.(*tiers.RemoteOptions); ok {
			po.Peer, po.Library = cfg.peer, env("KVTIER_LIBIBVERBS", "")
		}
	}
	// The variants share one scratch directory and what they make in it
	// (the disk tier's file, written once).
	run := runState{scratch: b.TempDir(), shared: tiers.NewShared()}
	defer run.shared.Close()
	vs := tiers.VariantsFor(opts, dir)
	if len(vs) == 1 {
		benchConfigGroup(b, cfg, backend, spec, layout, mode, dir, vs[0], run)
		return
	}
	for _, v := range vs {
		b.Run("variant="+v.Name, func(b *testing.B) {
			benchConfigGroup(b, cfg, backend, spec, layout, mode, dir, v, run)
		})
	}
}

// runState is what the configurations of one benchVariants share.
type runState struct {
	scratch string
	shared  *tiers.Shared
}

// benchConfigGroup runs one sub-benchmark per prefix for one tier, layout,
// copy mode and variant; the tier is set up once, on the first prefix
// that runs.
func benchConfigGroup(b *testing.B, cfg benchConfig, backend tiers.Backend, spec tiers.Spec, layout kv.Layout, mode tiers.CopyMode,
	dir tiers.Direction, v tiers.Variant, run runState) {
	g := cfg.geom
	env := tiers.Env{Backend: backend, Geometry: g, Layout: layout, Copy: mode, Direction: dir, Seed: 1, Options: v.Options, Log: os.Stderr,
		Scratch: run.scratch, Shared: run.shared}
	c := sweep.Config{Backend: backend, Spec: spec, Tier: spec.New(env), Layout: layout, Copy: mode, Direction: dir, Variant: v.Name, Geom: g, Seed: 1}
	defer c.Tier.Close()
	if reason := c.Tier.Available(); reason != "" {
		skipPrefixes(b, cfg, reason)
	}
	if spec.Moves() && !slices.Contains(backend.CopyModes(), mode) {
		skipPrefixes(b, cfg, tiers.UnsupportedModeReason(mode))
	}
	ready := false
	for _, tok := range cfg.prefixes {
		b.Run(fmt.Sprintf("prefix=%d", tok), func(b *testing.B) {
			if reason := overBudget(b, cfg, c, sweep.Prefix(g, tok)); reason != "" {
				skipLine(b, reason)
				b.Skip(reason)
			}
			if !ready {
				if err := c.Tier.Setup(context.Background(), g.Blocks(cfg.prefixes[len(cfg.prefixes)-1])); err != nil {
					b.Skipf("setup: %v", err)
				}
				ready = true
			}
			benchPrefix(b, c, sweep.Prefix(g, tok))
		})
	}
}

// skipLine says that the benchmark b skips, and why, in a line of its
// own on stdout: go test prints its --- SKIP lines with -v only, and
// bench2csv needs every skipped configuration to write its row.
func skipLine(b *testing.B, reason string) {
	fmt.Printf("--- SKIP: %s: %s\n", b.Name(), strings.ReplaceAll(reason, "\n", " "))
}

// skipPrefixes skips b, a configuration of every prefix, saying so once
// per prefix (the sweep writes one row per prefix).
func skipPrefixes(b *testing.B, cfg benchConfig, reason string) {
	for _, tok := range cfg.prefixes {
		fmt.Printf("--- SKIP: %s/prefix=%d: %s\n", b.Name(), tok, strings.ReplaceAll(reason, "\n", " "))
	}
	b.Skip(reason)
}

// gemmRates holds each backend's GEMM rate, measured once.
var gemmRates sync.Map // tiers.Backend -> float64

// overBudget returns the sweep's reason for skipping c at p, a compute
// configuration whose estimated time per rep (its FLOPs over the
// backend's GEMM rate) exceeds the budget, or "".
func overBudget(b *testing.B, cfg benchConfig, c sweep.Config, p tiers.Prefix) string {
	if c.Spec.Moves() || cfg.budget <= 0 {
		return ""
	}
	rate, ok := gemmRates.Load(c.Backend)
	if !ok {
		s := &harness.Sampler{Suite: "bench", Sink: sinkFunc(func(results.Row) error { return nil }), Policy: harness.Policy{Reps: 1}}
		r, err := sweep.GEMMRate(context.Background(), c.Backend, s, c.Geom)
		if err != nil {
			b.Logf("GEMM calibration: %v; no estimate", err)
			return ""
		}
		rate, _ = gemmRates.LoadOrStore(c.Backend, r)
	}
	if sec := c.Tier.Work(p) / rate.(float64); sec > cfg.budget.Seconds() {
		return sweep.OverBudget(sec, cfg.budget)
	}
	return ""
}

// benchPrefix verifies one fetch of p the way a sweep verifies a rep,
// then times b.N fetches through the same Sampler and case as the sweep,
// so the row it records has the sweep's labels.
func benchPrefix(b *testing.B, c sweep.Config, p tiers.Prefix) {
	ctx := context.Background()
	hc := c.Case(p)
	var row results.Row
	s := &harness.Sampler{Suite: "bench", Sink: sinkFunc(func(r results.Row) error { row = r; return nil }),
		Policy: harness.Policy{Reps: 1}}
	if _, err := s.Measure(ctx, hc); err != nil || row.Status != results.StatusOK {
		b.Fatalf("verified sample: %v %s %s", err, row.Status, row.Reason)
	}
	printRowLabels(row)
	if hc.Row.Bytes > 0 {
		b.SetBytes(hc.Row.Bytes)
	}
	var total float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sec, _, err := s.Sample(ctx, &hc)
		if err != nil {
			b.Fatal(err)
		}
		total += sec
	}
	b.StopTimer()
	row.SetTime(total / float64(b.N))
	if hc.Work > 0 {
		b.ReportMetric(hc.Work, "flop/op")
		row.Set("tflops", hc.Work/row.Seconds/1e12)
		b.ReportMetric(hc.Work/row.Seconds/1e12, "TFLOP/s")
	} else if row.GBps > 0 {
		b.ReportMetric(row.GBps, "GB/s")
	}
	record(b.Name(), row)
}

// sinkFunc is a results.Sink of one function.
type sinkFunc func(results.Row) error

func (f sinkFunc) Write(r results.Row) error { return f(r) }
func (f sinkFunc) Close() error              { return nil }
