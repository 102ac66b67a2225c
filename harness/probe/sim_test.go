package probe

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/vllmsim"
)

// startSim starts an in-process kvtier sim and returns its URL.
func startSim(t *testing.T, cfg vllmsim.Config) string {
	t.Helper()
	s, err := vllmsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	url, err := s.Start(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// simPair starts a producer and a consumer that pulls from it, both with
// a GPU pool of gpuBlocks and a CPU offload store of cpuBlocks.
func simPair(t *testing.T, gpuBlocks, cpuBlocks int, scale float64) (consumer, producer string) {
	producer = startSim(t, vllmsim.Config{GPUBlocks: gpuBlocks, TimeScale: scale, Seed: 1, Role: "producer", EnablePromptTokensDetails: true})
	consumer = startSim(t, vllmsim.Config{GPUBlocks: gpuBlocks, CPUBlocks: cpuBlocks, TimeScale: scale, Seed: 2,
		Role: "consumer", KVPeer: producer, EnablePromptTokensDetails: true})
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

// TestProbeSimFourTiers is issue 6's acceptance test: against the sim at
// 8k, miss > remote > cpu > gpu in TTFT p50, and every row verified.
func TestProbeSimFourTiers(t *testing.T) {
	// Real time and five reps: at 8k the sim's CPU hit is only some 20 ms
	// slower than its GPU hit, and a loaded CI machine adds delays of that
	// size to single requests; the median of five rides over two of them.
	consumer, producer := simPair(t, 640, 4096, 1)
	cfg := Config{
		Endpoint: consumer, Producer: producer, Connector: "nixl",
		Tiers: Tiers, Prefixes: []int{8192}, Reps: 5, Seed: 5,
		EvictMargin: 1.5, Timeout: 30 * time.Second,
	}
	p := mustNew(t, cfg)
	info := p.Info()
	if info.BlockSize != 16 || info.BlockSource != "vllm:cache_config_info" || info.GPUBlocks != 640 || !info.Simulated {
		t.Errorf("info = %+v", info)
	}
	sink := mustRun(t, p)
	if len(sink.rows) != 20 {
		t.Fatalf("%d rows, want 20", len(sink.rows))
	}
	for _, r := range sink.rows {
		if r.Status != results.StatusOK || r.Get("verified") != "true" {
			t.Errorf("%s rep %d: %s %q verified=%s %q", r.Tier, r.Rep, r.Status, r.Reason, r.Get("verified"), r.Get("verify_reason"))
		}
		if r.Get("simulated") != "true" || r.Get("prompt_tokens") != "8192" || r.Blocks != 512 {
			t.Errorf("%s row: %+v", r.Tier, r)
		}
	}
	miss, remote, cpu, gpu := p50(sink.rows, "miss"), p50(sink.rows, "remote"), p50(sink.rows, "cpu"), p50(sink.rows, "gpu")
	t.Logf("TTFT p50 at 8k: miss %.4f remote %.4f cpu %.4f gpu %.4f", miss, remote, cpu, gpu)
	if !(miss > remote && remote > cpu && cpu > gpu && gpu > 0) {
		t.Errorf("want miss > remote > cpu > gpu, got %.4f %.4f %.4f %.4f", miss, remote, cpu, gpu)
	}
	for _, r := range sink.rows {
		switch r.Tier {
		case "gpu":
			if r.Float("hit_tokens") < 8192-16 {
				t.Errorf("gpu hit_tokens %s", r.Get("hit_tokens"))
			}
		case "cpu", "remote":
			if r.Float("external_hit_tokens") < 8192-16 {
				t.Errorf("%s external_hit_tokens %s", r.Tier, r.Get("external_hit_tokens"))
			}
		}
	}
}

// TestProbeSimNoOffload: with the sim's CPU offload off, the cpu rows are
// measured but not verified, and say why.
func TestProbeSimNoOffload(t *testing.T) {
	url := startSim(t, vllmsim.Config{GPUBlocks: 256, CPUBlocks: 0, TimeScale: 0.01, Seed: 1})
	cfg := Config{Endpoint: url, Tiers: []string{"cpu"}, Prefixes: []int{1024}, Reps: 2, Seed: 1,
		EvictMargin: 1.5, Timeout: 30 * time.Second}
	p := mustNew(t, cfg)
	sink := mustRun(t, p)
	for _, r := range sink.rows {
		if r.Status != results.StatusOK || r.Get("verified") != "false" ||
			!strings.Contains(r.Get("verify_reason"), "external_prefix_cache_hits rose by 0 of 1024") {
			t.Errorf("cpu rep %d: %s %q verified=%s %q", r.Rep, r.Status, r.Reason, r.Get("verified"), r.Get("verify_reason"))
		}
	}
}

// TestOverheadSim measures the client floor against a zero-cost sim.
func TestOverheadSim(t *testing.T) {
	zero, err := vllmsim.LookupProfile("zero")
	if err != nil {
		t.Fatal(err)
	}
	url := startSim(t, vllmsim.Config{Profile: zero, TimeScale: 0})
	c, err := NewClient(url, 10*time.Second)
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
