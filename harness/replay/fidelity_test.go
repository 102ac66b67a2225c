package replay

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvtier/kvtier/harness/trace"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/vllmsim"
)

// memSink keeps rows in memory.
type memSink struct{ rows []results.Row }

func (s *memSink) Write(r results.Row) error { s.rows = append(s.rows, r); return nil }
func (s *memSink) Close() error              { return nil }

// replayOnSim replays w against a simulator of gpuBlocks on an in-memory
// network; call it inside a synctest bubble.
func replayOnSim(t *testing.T, w *Workload, gpuBlocks int, cfg Config) (*Summary, []results.Row) {
	t.Helper()
	var net vllmsim.MemNet
	defer net.Close()
	s, url, err := net.Start(vllmsim.Config{GPUBlocks: gpuBlocks, TimeScale: 1, Seed: 1, EnablePromptTokensDetails: true}, "sim")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg.Endpoint, cfg.HTTP = url, net.Client()
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.Speedup == 0 {
		cfg.Speedup = 1
	}
	rp, err := New(context.Background(), cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	sum, err := rp.Run(context.Background(), &sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sum, sink.rows
}

func TestFidelityExplore(t *testing.T) {
	o := trace.DefaultGenOptions()
	o.Sessions, o.Turns, o.SystemPrompts, o.SystemTokens = 40, 6, 4, 2048
	o.TurnTokens, o.OutputTokens, o.Think, o.Duration = 600, 200, 60*time.Second, 5*time.Minute
	o.BlockTokens = 512
	path := filepath.Join(t.TempDir(), "t.jsonl")
	f, _ := os.Create(path)
	trace.Generate(f, o)
	f.Close()
	res, err := trace.AnalyzeFile(context.Background(), path, "m", trace.Options{}, trace.AnalyzeOptions{BytesPerToken: 1, Touch: trace.TouchReverse})
	if err != nil {
		t.Fatal(err)
	}
	curve := res.Analysis.Curves[0]
	w, err := LoadTrace(context.Background(), path, trace.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := w.WorkingSet(DispatchTimestamp, 0)
	t.Logf("%d requests, ws %d tokens, ceiling %.3f", len(w.Requests), ws, curve.Ceiling())
	for _, f := range []float64{0.5, 0.75, 1} {
		blocks := int(f * float64(ws) / 16)
		synctest.Test(t, func(t *testing.T) {
			sum, _ := replayOnSim(t, w, blocks, Config{Dispatch: DispatchTimestamp, MaxOutput: 0})
			pred := curve.HitRatio(int64(blocks * 16 / 512))
			t.Logf("%.2f× ws: %d blocks: realized %.3f, predicted (trace) %.3f, online %.3f, cached %.3f, ok %d, ttft p50 %.3f", f, blocks, sum.APC, pred, sum.PredictedAPC, sum.CachedShare, sum.OK, sum.TTFT.P50)
		})
	}
}
