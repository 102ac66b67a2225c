package replayer

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/workload"
)

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
	var sink resultstest.Sink
	sum, err := rp.Run(context.Background(), &sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sum, sink.Rows()
}

// fidelityTrace writes a synthetic Mooncake trace (512-token hash-id
// blocks, sessions sharing system prompts, think times long enough that
// few requests overlap) and returns its path.
func fidelityTrace(t *testing.T) string {
	t.Helper()
	o := workload.DefaultGenOptions()
	o.Sessions, o.Turns, o.SystemPrompts, o.SystemTokens = 16, 4, 3, 2048
	o.TurnTokens, o.OutputTokens, o.Think, o.Duration = 600, 200, 60*time.Second, 4*time.Minute
	path := filepath.Join(t.TempDir(), "fidelity.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := workload.Generate(f, o); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplayMatchesTracePrediction replays a trace against the simulator
// with C GPU blocks at 0.5×, 0.75× and 1× the trace's working set and
// checks the realized APC (the server's counters) is within 5 points of
// what kvtier trace --touch reverse predicts at C.
func TestReplayMatchesTracePrediction(t *testing.T) {
	if raceDetector {
		t.Skip("three replays of 62 requests take 7 s under the race detector; make test runs this without it")
	}
	t.Parallel()
	path := fidelityTrace(t)
	w, err := LoadTrace(context.Background(), path, workload.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	curve, err := Model(w.Requests, w.BlockTokens, 1) // what kvtier trace --touch reverse computes
	if err != nil {
		t.Fatal(err)
	}
	ws, err := w.WorkingSet(DispatchTimestamp, 0)
	if err != nil || ws == 0 {
		t.Fatalf("working set %d tokens, %v", ws, err)
	}
	for _, f := range []float64{0.5, 0.75, 1} {
		blocks := int(f * float64(ws) / vllmsim.DefaultBlockSize)
		synctest.Test(t, func(t *testing.T) {
			sum, _ := replayOnSim(t, w, blocks, Config{Dispatch: DispatchTimestamp, MaxOutput: 32})
			pred := curve.HitRatio(int64(blocks * vllmsim.DefaultBlockSize / w.BlockTokens))
			t.Logf("%.2f × the working set (%d blocks): realized APC %.2f %%, kvtier trace predicts %.2f %% (the online model %.2f %%); %d of %d requests ok",
				f, blocks, 100*sum.APC, 100*pred, 100*sum.PredictedAPC, sum.OK, len(w.Requests))
			if sum.OK != len(w.Requests) {
				t.Errorf("%d of %d requests ok", sum.OK, len(w.Requests))
			}
			if d := math.Abs(sum.APC - pred); !(d <= 0.05) {
				t.Errorf("realized APC %.3f, predicted %.3f: %.1f points apart, limit 5", sum.APC, pred, 100*d)
			}
		})
	}
}
