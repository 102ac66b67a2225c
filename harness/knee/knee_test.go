package knee

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvtier/kvtier/harness/replay"
	"github.com/kvtier/kvtier/harness/trace"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/vllmsim"
)

// memSink keeps rows in memory.
type memSink struct {
	mu   sync.Mutex
	rows []results.Row
}

func (s *memSink) Write(r results.Row) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, r)
	return nil
}
func (s *memSink) Close() error { return nil }

// referenceWorkload is the knee workload of the reference: 4 closed-loop
// sessions of 6 turns, each ending near 0.9 GB of Qwen3-Coder-30B-A3B KV.
func referenceWorkload(t *testing.T) *replay.Workload {
	t.Helper()
	w, err := replay.Generate(trace.GenOptions{
		Sessions: 4, Turns: 6, SystemTokens: 2048, TurnTokens: 1024, OutputTokens: 256,
		BlockTokens: 16, Seed: 1, Fixed: true,
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// referenceGB are the reference's capacities (h20-reference.md).
var referenceGB = []float64{1.2, 2.4, 3.6, 9.7, 14.5}

func blocksOf(gb []float64, blockBytes int64) []int {
	var out []int
	for _, g := range gb {
		out = append(out, int(g*1e9/float64(blockBytes)))
	}
	return out
}

func TestKneeEmbeddedReference(t *testing.T) {
	g, _ := kv.LookupModel(kv.DefaultModel)
	w := referenceWorkload(t)
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		cfg := Config{
			Capacities: blocksOf(referenceGB, g.BlockBytes()), BlockSize: 16, BytesPerToken: g.BytesPerToken(),
			Sim: vllmsim.Config{TimeScale: 1, Seed: 1, EnablePromptTokensDetails: true}, Net: &net,
			HealthTimeout: time.Minute, Grace: time.Second,
			Replay: replay.Config{Dispatch: replay.DispatchSession, Concurrency: 4, Speedup: 1, Timeout: 10 * time.Minute, HTTP: net.Client(), Seed: 1},
		}
		var reqs, caps, curve memSink
		if err := Run(context.Background(), cfg, w, Sinks{Requests: &reqs, Capacities: &caps, Curve: &curve}); err != nil {
			t.Fatal(err)
		}
		for i, r := range caps.rows {
			t.Logf("%.1f GB (%s blocks): %s %s apc %.3f predicted %.3f ttft p50 %.3f p90 %.3f p99 %.3f, ws %.2f GB", referenceGB[i], r.Get("gpu_blocks"), r.Status, r.Reason,
				r.Float("apc"), r.Float("predicted_apc"), r.Float("ttft_p50_s"), r.Float("ttft_p90_s"), r.Float("ttft_p99_s"), r.Float("working_set_bytes")/1e9)
		}
		checkShape(t, caps.rows)
	})
}

// checkShape checks the reference's shape: realized APC at the largest
// capacity at least twice the smallest's, TTFT p90 falling at least 5×
// across the knee and flat (±25 %) beyond it, and the knee (the first
// capacity within 5 % of the largest's APC) within one capacity step of
// the working set.
func checkShape(t *testing.T, rows []results.Row) {
	t.Helper()
	n := len(rows)
	for _, r := range rows {
		if r.Status != results.StatusOK {
			t.Fatalf("%s blocks: %s %s", r.Get("gpu_blocks"), r.Status, r.Reason)
		}
	}
	apc := func(i int) float64 { return rows[i].Float("apc") }
	p90 := func(i int) float64 { return rows[i].Float("ttft_p90_s") }
	if !(apc(n-1) >= 2*apc(0)) {
		t.Errorf("APC %.3f at the largest capacity, %.3f at the smallest: want at least twice", apc(n-1), apc(0))
	}
	knee := n - 1
	for i := range rows {
		if apc(i) >= 0.95*apc(n-1) {
			knee = i
			break
		}
	}
	ws := rows[0].Float("working_set_tokens")
	nearest := 0
	for i, r := range rows {
		if math.Abs(r.Float("capacity_tokens")-ws) < math.Abs(rows[nearest].Float("capacity_tokens")-ws) {
			nearest = i
		}
	}
	if knee-nearest > 1 || nearest-knee > 1 {
		t.Errorf("knee at capacity %d, the working set (%g tokens) nearest capacity %d: more than one step apart", knee, ws, nearest)
	}
	if !(p90(0) >= 5*p90(knee)) {
		t.Errorf("TTFT p90 %.3f s below the knee, %.3f s at it: want a fall of at least 5×", p90(0), p90(knee))
	}
	for i := knee + 1; i < n; i++ {
		if math.Abs(p90(i)/p90(knee)-1) > 0.25 {
			t.Errorf("TTFT p90 %.3f s at capacity %d beyond the knee, %.3f s at it: want within ±25 %%", p90(i), i, p90(knee))
		}
	}
}
