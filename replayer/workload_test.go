package replayer

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/workload"
)

// TestGenerateStopsEarly checks that Generate holds only the requests it
// returns: asked for the first 10 requests of a large generated trace
// (hundreds of MiB of text), it allocates a small fraction of that.
func TestGenerateStopsEarly(t *testing.T) {
	o := workload.DefaultGenOptions()
	o.Sessions = 1 << 16
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w, err := Generate(context.Background(), o, 10)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Requests) != 10 {
		t.Fatalf("%d requests, want 10", len(w.Requests))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("Generate allocated %d MiB for 10 requests: it generated the whole trace", alloc>>20)
	}
}

// TestWorkloadTooLarge checks the cap on what a workload holds, for a
// generated workload and a trace file alike: past it, an error wrapping
// ErrTooLarge that says how many requests it took. Not parallel: it
// lowers the cap for the package.
func TestWorkloadTooLarge(t *testing.T) {
	old := workloadBytes
	workloadBytes = 64 << 10
	t.Cleanup(func() { workloadBytes = old })
	_, err := Generate(context.Background(), DefaultSessions(), 0)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "the first ") {
		t.Fatalf("Generate past the cap: %v, want ErrTooLarge", err)
	}
	if _, err := Generate(context.Background(), DefaultSessions(), 2); err != nil {
		t.Fatalf("the first 2 requests, under the cap: %v", err)
	}
}
