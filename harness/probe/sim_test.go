package probe

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/vllmsim/simtest"
)

// memSim starts a sim on net (inside a synctest bubble: virtual time).
func memSim(t *testing.T, net *vllmsim.MemNet, host string, cfg vllmsim.Config) string {
	t.Helper()
	s, url, err := net.Start(cfg, host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return url
}

// virtualPair starts, on an in-memory network in a synctest bubble, a
// producer and a consumer with CPU offload that pulls from it, at time
// scale 1 (the virtual clock makes it instant).
func virtualPair(t *testing.T, net *vllmsim.MemNet, gpuBlocks, cpuBlocks int, extra func(*vllmsim.Config)) (consumer, producer string) {
	pc := vllmsim.Config{GPUBlocks: gpuBlocks, TimeScale: 1, Seed: 1, Role: "producer", EnablePromptTokensDetails: true, EngineID: "prod-0"}
	cc := vllmsim.Config{GPUBlocks: gpuBlocks, CPUBlocks: cpuBlocks, TimeScale: 1, Seed: 2, Role: "consumer", EnablePromptTokensDetails: true}
	if extra != nil {
		extra(&pc)
		extra(&cc)
	}
	producer = memSim(t, net, "producer", pc)
	consumer = memSim(t, net, "consumer", cc)
	return consumer, producer
}

func p50(rows []results.Row, tier string) float64 {
	var ts []float64
	for _, r := range rows {
		if r.Tier == tier && r.Status == results.StatusOK {
			ts = append(ts, r.Seconds)
		}
	}
	if len(ts) == 0 {
		return 0
	}
	slices.Sort(ts)
	return ts[len(ts)/2]
}

// fourTierRef is the four-tier TTFT table of the H20 reference
// (docs/reference.md, analysis.ReferenceTTFT), seconds by L and tier.
var fourTierRef = func() map[int]map[string]float64 {
	m := map[int]map[string]float64{}
	for _, r := range analysis.ReferenceTTFT {
		m[int(r.L)] = map[string]float64{}
		for _, tier := range []string{"miss", "remote", "cpu", "gpu"} {
			m[int(r.L)][tier] = r.Tier(tier)
		}
	}
	return m
}()

// TestProbeSimFourTierGrid runs the probe, over HTTP on the in-memory
// network and the virtual clock, against a simulated H20 pair for every
// cell of the reference's four-tier table: every row verified, every TTFT
// within 25 % of the reference, miss > remote > cpu > gpu at each length.
func TestProbeSimFourTierGrid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		// A GPU pool just over the longest prompt keeps the cpu tier's
		// eviction flood small.
		consumer, producer := virtualPair(t, &net, 65536/16+256, 4*(65536/16+256), nil)
		p := mustNew(t, Config{
			Endpoint: consumer, Producer: producer, Connector: "nixl", HTTP: net.Client(),
			Tiers: Tiers, Prefixes: []int{8192, 16384, 32768, 65536}, Reps: 1, Seed: 5,
			EvictMargin: 1.5, Timeout: 120 * time.Second,
		})
		if g := p.Info().Generation; g.External != ExtQueried || !g.BySource || p.Info().Version != vllmsim.DefaultVersion {
			t.Errorf("generation %s, version %q", g, p.Info().Version)
		}
		sink := mustRun(t, p)
		for _, r := range sink.Rows() {
			if r.Status != results.StatusOK || r.Get("verified") != "true" {
				t.Errorf("%s %d: %s %q verified=%s %q", r.Tier, r.PrefixTokens, r.Status, r.Reason, r.Get("verified"), r.Get("verify_reason"))
				continue
			}
			want := fourTierRef[int(r.PrefixTokens)][r.Tier]
			off := r.Seconds/want - 1
			t.Logf("%-6s %5dk: sim %.3f s, reference %.3f s (%+.0f%%), verified by %s", r.Tier, r.PrefixTokens/1024, r.Seconds, want, 100*off, r.Get("verified_by"))
			if math.Abs(off) > 0.25 {
				t.Errorf("%s %d: TTFT %.3f s, reference %.3f s: off %+.0f%%, limit 25%%", r.Tier, r.PrefixTokens, r.Seconds, want, 100*off)
			}
		}
		for l := range fourTierRef {
			var at []results.Row
			for _, r := range sink.Rows() {
				if int(r.PrefixTokens) == l {
					at = append(at, r)
				}
			}
			if !(p50(at, "miss") > p50(at, "remote") && p50(at, "remote") > p50(at, "cpu") && p50(at, "cpu") > p50(at, "gpu")) {
				t.Errorf("%d: want miss > remote > cpu > gpu", l)
			}
		}
	})
}

// TestProbeSimMooncakeShapes drives the remote tier with each Mooncake
// request shape against simulated producers that speak all three: every
// row verified, and its TTFT the pull alone (the producer had finished
// its prefill): within a few percent of the NIXL flow's.
func TestProbeSimMooncakeShapes(t *testing.T) {
	for _, shape := range []string{MooncakeAuto, MooncakeBootstrap, MooncakeEngine, MooncakeTransfer, "nixl"} {
		t.Run(shape, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var net vllmsim.MemNet
				defer net.Close()
				consumer, producer := virtualPair(t, &net, 2048, 0, nil)
				cfg := Config{
					Endpoint: consumer, Producer: producer, Connector: "mooncake", MooncakeShape: shape, BootstrapPort: 80,
					HTTP: net.Client(), Tiers: []string{"remote"}, Prefixes: []int{8192}, Reps: 2, Seed: 9,
					EvictMargin: 1.5, Timeout: 60 * time.Second,
				}
				if shape == "nixl" {
					cfg.Connector, cfg.MooncakeShape = "nixl", ""
				}
				p := mustNew(t, cfg)
				sink := mustRun(t, p)
				for _, r := range sink.Rows() {
					if r.Status != results.StatusOK || r.Get("verified") != "true" {
						t.Fatalf("%s: %s %q verified=%s %q", shape, r.Status, r.Reason, r.Get("verified"), r.Get("verify_reason"))
					}
					// The pull of 8176 tokens at 7 GB/s plus the front end
					// and one block: about 0.166 s modeled.
					if r.Seconds < 0.14 || r.Seconds > 0.19 {
						t.Errorf("%s: remote TTFT %.4f s: not the pull alone", shape, r.Seconds)
					}
					if want := map[string]string{MooncakeAuto: MooncakeTransfer, "nixl": ""}[shape]; r.Get("mooncake_shape") != wantShape(want, shape) {
						t.Errorf("mooncake_shape %q for %s", r.Get("mooncake_shape"), shape)
					}
				}
				t.Logf("%s: remote TTFT %.4f s (%s)", shape, sink.Rows()[0].Seconds, p.Info().MooncakeSource)
			})
		})
	}
}

// wantShape returns a unless it is empty and b is not "nixl".
func wantShape(a, b string) string {
	switch {
	case b == "nixl":
		return ""
	case a != "":
		return a
	}
	return b
}

// TestProbeSimNoOffload: with the sim's CPU offload off, the cpu rows are
// measured but not verified, and say why.
func TestProbeSimNoOffload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		url := memSim(t, &net, "sim", vllmsim.Config{GPUBlocks: 256, CPUBlocks: 0, TimeScale: 1, Seed: 1})
		cfg := Config{Endpoint: url, HTTP: net.Client(), Tiers: []string{"cpu"}, Prefixes: []int{1024}, Reps: 2, Seed: 1,
			EvictMargin: 1.5, Timeout: 30 * time.Second}
		p := mustNew(t, cfg)
		sink := mustRun(t, p)
		for _, r := range sink.Rows() {
			if r.Status != results.StatusOK || r.Get("verified") != "false" ||
				!strings.Contains(r.Get("verify_reason"), "external_kv_transfer=0,local_cache_hit=0,local_compute=1024") {
				t.Errorf("cpu rep %d: %s %q verified=%s %q", r.Rep, r.Status, r.Reason, r.Get("verified"), r.Get("verify_reason"))
			}
		}
	})
}

// TestProbeSimCPUCapacity: the eviction flood is sized from the CPU
// store the server exposes, and a store too small to keep the prefix
// while the GPU pool is flooded skips the row instead of measuring a miss.
func TestProbeSimCPUCapacity(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cpuBlocks int
		skip      bool
	}{{"roomy", 4096, false}, {"tight", 700, false}, {"too small", 300, true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var net vllmsim.MemNet
				defer net.Close()
				url := memSim(t, &net, "sim", vllmsim.Config{GPUBlocks: 256, CPUBlocks: tc.cpuBlocks, TimeScale: 1, Seed: 1})
				p := mustNew(t, Config{Endpoint: url, HTTP: net.Client(), Tiers: []string{"cpu"}, Prefixes: []int{2048}, Reps: 1, Seed: 1,
					EvictMargin: 3, Timeout: 30 * time.Second})
				if o := p.Info().Offload; o.Tokens != tc.cpuBlocks*16 || o.TokensSource != "vllm:cache_config_info num_cpu_blocks" {
					t.Errorf("offload %+v", o)
				}
				r := mustRun(t, p).Rows()[0]
				if tc.skip {
					if r.Status != results.StatusSkipped || !strings.Contains(r.Reason, "cannot keep a 2048-token prefix") {
						t.Errorf("row %s %q", r.Status, r.Reason)
					}
					return
				}
				flood := int(r.Float("evict_tokens"))
				if r.Get("verified") != "true" || flood <= 256*16 || flood+2048 > tc.cpuBlocks*16 {
					t.Errorf("row %s verified=%s %q, flood %d tokens for a %d-token store", r.Status, r.Get("verified"), r.Get("verify_reason"), flood, tc.cpuBlocks*16)
				}
			})
		})
	}
}

// TestOverheadSim measures the client floor against a zero-cost sim.
func TestOverheadSim(t *testing.T) {
	zero, err := vllmsim.LookupProfile("zero")
	if err != nil {
		t.Fatal(err)
	}
	_, url := simtest.Start(t, vllmsim.Config{Profile: zero, TimeScale: 0})
	c, err := serving.NewClient(url, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	models, err := c.Models(t.Context())
	if err != nil || len(models) == 0 {
		t.Fatalf("models %v: %v", models, err)
	}
	d, err := Overhead(t.Context(), c, models[0].ID, 1024, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 || d > 2*time.Second {
		t.Errorf("client overhead %v", d)
	}
	t.Logf("client overhead TTFT p50 at 1k: %v", d)
}

var _ = fmt.Sprint

// TestProbeSimCacheTiers: against servers with the per-tier split of
// cached tokens, gpu rows are verified from device, cpu from host and
// remote from p2p.
func TestProbeSimCacheTiers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		consumer, producer := virtualPair(t, &net, 1024, 4096, func(c *vllmsim.Config) { c.CacheSourceMetrics = true })
		p := mustNew(t, Config{Endpoint: consumer, Producer: producer, HTTP: net.Client(), Tiers: []string{"gpu", "cpu", "remote"},
			Prefixes: []int{4096}, Reps: 1, Seed: 3, EvictMargin: 1.5, Timeout: 30 * time.Second})
		if !p.Info().Generation.CacheTier {
			t.Fatalf("generation %s: the tier split was not seen", p.Info().Generation)
		}
		want := map[string]string{"gpu": "device=4080", "cpu": "host=4080", "remote": "p2p=4080"}
		for _, r := range mustRun(t, p).Rows() {
			if r.Get("verified") != "true" || r.Get("verified_by") != "prompt_tokens_cached_by_source" || !strings.Contains(r.Get("source_tokens"), want[r.Tier]) {
				t.Errorf("%s: verified=%s by %s (%s) %q", r.Tier, r.Get("verified"), r.Get("verified_by"), r.Get("source_tokens"), r.Get("verify_reason"))
			}
		}
	})
}

// TestProbeSimChat: with the chat API every measured prompt is sized to
// exactly its prefix length through POST /tokenize, and the tiers are
// verified as with token ids.
func TestProbeSimChat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		consumer, producer := virtualPair(t, &net, 1024, 4096, nil)
		p := mustNew(t, Config{Endpoint: consumer, Producer: producer, HTTP: net.Client(), API: serving.APIChat, Tiers: Tiers,
			Prefixes: []int{3000}, Reps: 1, Seed: 3, EvictMargin: 1.5, Timeout: 30 * time.Second})
		for _, r := range mustRun(t, p).Rows() {
			if r.Get("api") != serving.APIChat || r.Get("prompt_tokens") != "3000" || r.Get("verified") != "true" || r.Reason != "" {
				t.Errorf("%s: api %s, %s prompt tokens, verified=%s %q, reason %q", r.Tier, r.Get("api"), r.Get("prompt_tokens"), r.Get("verified"), r.Get("verify_reason"), r.Reason)
			}
		}
	})
}
