// Package bench runs kvtier's tiers as Go benchmarks:
//
//	go test -bench . ./bench
//
// BenchmarkTiers loops over the tier registry, so a new tier appears here
// without edits. Sub-benchmarks are named
// tier=host/layout=layerwise/copy=percopy/prefix=4096; b.SetBytes makes Go
// print MB/s, and GB/s (or TFLOP/s for recompute) is reported as an extra
// metric. A tier that cannot run here is skipped with its reason.
//
// Environment:
//
//	KVTIER_PREFIXES  prefix lengths (default 1k,4k)
//	KVTIER_TIERS     tiers to run (default every tier; recompute on the
//	                 host backend only when named, it is slow on a CPU)
//	KVTIER_LAYOUTS   layouts (default layerwise,blockwise)
//	KVTIER_MODEL     preset name or config.json path (default qwen3-coder-30b-a3b)
//	KVTIER_BACKEND   auto, host or cuda (default auto)
//	KVTIER_PEER      HOST:PORT of a kvtier serve peer for the remote tier
//	KVTIER_OUT       also write one row per sub-benchmark to this CSV
package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// benchConfig is the environment's configuration of the benchmarks.
type benchConfig struct {
	prefixes []int
	tiers    []string // empty: every tier
	layouts  []kv.Layout
	geom     kv.Geometry
	backend  string
	peer     string
	out      string
}

// benchLibs names the native libraries as kvtier's command does, from
// KVTIER_LIBCUDA, KVTIER_LIBCUBLAS and KVTIER_LIBIBVERBS.
func benchLibs() system.Libraries {
	return system.Libraries{CUDA: env("KVTIER_LIBCUDA", ""), CUBLAS: env("KVTIER_LIBCUBLAS", ""), IBVerbs: env("KVTIER_LIBIBVERBS", "")}
}

func env(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

func loadConfig() (benchConfig, error) {
	var c benchConfig
	var err error
	if c.prefixes, err = units.ParseList(env("KVTIER_PREFIXES", "1k,4k"), units.ParseTokens); err != nil {
		return c, fmt.Errorf("KVTIER_PREFIXES: %w", err)
	}
	slices.Sort(c.prefixes)
	if t := env("KVTIER_TIERS", ""); t != "" {
		for _, name := range strings.Split(t, ",") {
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
	model := env("KVTIER_MODEL", kv.DefaultModel)
	if strings.HasSuffix(model, ".json") || strings.Contains(model, "/") {
		c.geom, err = kv.ParseConfig(model)
	} else {
		c.geom, err = kv.LookupModel(model)
	}
	if err != nil {
		return c, fmt.Errorf("KVTIER_MODEL: %w", err)
	}
	c.backend = env("KVTIER_BACKEND", "auto")
	c.peer = env("KVTIER_PEER", "")
	c.out = env("KVTIER_OUT", "")
	return c, nil
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
	s, err := results.CreateCSV(path, results.SweepColumns...)
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
	backend, why, err := tiers.OpenBackend(context.Background(), cfg.backend, tiers.BackendConfig{NUMA: -1, Log: os.Stderr, Libs: benchLibs()})
	if err != nil {
		b.Fatalf("KVTIER_BACKEND=%s: %v", cfg.backend, err)
	}
	defer backend.Close()
	for _, w := range why {
		b.Logf("backend %s; using %s", w, backend.Name())
	}
	for _, spec := range tiers.All() {
		if len(cfg.tiers) > 0 && !slices.Contains(cfg.tiers, spec.Name) {
			continue
		}
		b.Run("tier="+spec.Name, func(b *testing.B) {
			if !spec.Moves {
				if backend.Name() == "host" && !slices.Contains(cfg.tiers, spec.Name) {
					b.Skip(spec.Name + " on the host backend runs the prefill GEMMs on the CPU, which takes minutes per prefix: name it in KVTIER_TIERS to run it")
				}
				benchConfigGroup(b, cfg, backend, spec, kv.Layerwise, "")
				return
			}
			for _, layout := range cfg.layouts {
				b.Run("layout="+string(layout), func(b *testing.B) {
					for _, mode := range tiers.CopyModes() {
						b.Run("copy="+string(mode), func(b *testing.B) {
							benchConfigGroup(b, cfg, backend, spec, layout, mode)
						})
					}
				})
			}
		})
	}
}

// benchConfigGroup runs one sub-benchmark per prefix for one tier, layout
// and copy mode; the tier is set up once, on the first prefix that runs.
func benchConfigGroup(b *testing.B, cfg benchConfig, backend tiers.Backend, spec tiers.Spec, layout kv.Layout, mode tiers.CopyMode) {
	g := cfg.geom
	e := tiers.Env{Backend: backend, Geometry: g, Layout: layout, Copy: mode, HostMem: tiers.Pinned, Seed: 1,
		Peer: cfg.peer, Transport: "tcp", Conns: 4, GIDIndex: -1, Log: os.Stderr, Libs: benchLibs()}
	tier := spec.New(e)
	defer tier.Close()
	if reason := tier.Available(); reason != "" {
		b.Skip(reason)
	}
	if spec.Moves && !slices.Contains(backend.CopyModes(), mode) {
		b.Skip(tiers.UnsupportedModeReason(mode))
	}
	ready := false
	for _, tok := range cfg.prefixes {
		p := tiers.Prefix{Tokens: tok, Blocks: g.Blocks(tok)}
		b.Run(fmt.Sprintf("prefix=%d", tok), func(b *testing.B) {
			if !ready {
				if err := tier.Setup(context.Background(), g.Blocks(cfg.prefixes[len(cfg.prefixes)-1])); err != nil {
					b.Skipf("setup: %v", err)
				}
				ready = true
			}
			benchPrefix(b, backend, spec, tier, layout, mode, p, g)
		})
	}
}

// benchPrefix verifies one fetch of p, then times b.N fetches with the
// backend's timer.
func benchPrefix(b *testing.B, backend tiers.Backend, spec tiers.Spec, tier tiers.Tier, layout kv.Layout, mode tiers.CopyMode, p tiers.Prefix, g kv.Geometry) {
	ctx := context.Background()
	payload := int64(p.Blocks) * g.BlockBytes()
	// Verify once, outside the timed loop.
	if spec.Moves {
		if s, ok := tier.(tiers.Scrubber); ok {
			if err := s.Scrub(p); err != nil {
				b.Fatal(err)
			}
		}
		if err := tier.Fetch(ctx, p); err != nil {
			b.Fatal(err)
		}
		if err := backend.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := tier.Verify(p); err != nil {
			b.Fatalf("verification failed: %v", err)
		}
		b.SetBytes(payload)
	}
	var total float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := backend.Timer(spec.Timing)
		if err := t.Start(); err != nil {
			b.Fatal(err)
		}
		if err := tier.Fetch(ctx, p); err != nil {
			b.Fatal(err)
		}
		sec, err := t.Stop()
		if err != nil {
			b.Fatal(err)
		}
		total += sec
	}
	b.StopTimer()
	mean := total / float64(b.N)
	r := results.NewRow("bench")
	r.Backend, r.Tier, r.Model = backend.Name(), spec.Name, g.Model
	r.PrefixTokens, r.Blocks = int64(p.Tokens), int64(p.Blocks)
	r.Set("device", backend.Device())
	r.Set("seed", 1)
	timing := "clock"
	if backend.Name() != "host" && spec.Timing == tiers.Queued {
		timing = "events"
	}
	r.Set("timing", timing)
	for k, v := range tier.Attrs() {
		switch k {
		case "transport":
			r.Transport = v
		case "copy", "src_mem", "dst_mem", "path", "link_gbps", "compute_dtype":
			r.Set(k, v)
		}
	}
	if spec.Moves {
		r.Layout = string(layout)
		r.Bytes = payload
		r.ChunkBytes = g.ChunkBytes(layout)
		r.Set("copy", string(mode))
		r.SetTime(mean)
		b.ReportMetric(r.GBps, "GB/s")
	} else {
		r.SetTime(mean)
		if w := tier.Work(p); w > 0 && mean > 0 {
			r.Set("flops", w)
			r.Set("tflops", w/mean/1e12)
			b.ReportMetric(w/mean/1e12, "TFLOP/s")
		}
	}
	record(b.Name(), r)
}
