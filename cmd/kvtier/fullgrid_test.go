package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/harness/mb1"
	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/kv"
)

// TestFullGridSaysEstimate: --full (the full grid with --sim) says how
// long it will take before it starts, as does any --sim grid estimated
// past the short grids' 2 minutes; a short one says nothing of the kind.
// Before, a full grid started without a word on its duration.
func TestFullGridSaysEstimate(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"probe", "--sim", "--full", "--tiers", "miss", "--prefix", "1k", "--reps", "1"}, true},
		{[]string{"probe", "--sim", "--tiers", "miss", "--prefix", "1k", "--reps", "1"}, false},
		{[]string{"interfere", "--sim", "--full", "--decode", "1", "--prefill", "1k", "--reps", "1", "--inject-after", "30ms"}, true},
	} {
		_, stderr := mustRunCLI(t, append(c.args, "--quiet", "--out", filepath.Join(t.TempDir(), "run"))...)
		first, _, _ := strings.Cut(stderr, "\n")
		if got := strings.Contains(first, ": --full: ") && strings.Contains(first, "estimated "); got != c.want {
			t.Errorf("%v: first line %q, estimate said %v, want %v", c.args, first, got, c.want)
		}
	}
}

// TestFullGridEstimates: the estimates grow with the grid and are of the
// order the full grids take on 2 cores (the full probe ran 9.5 minutes).
func TestFullGridEstimates(t *testing.T) {
	t.Parallel()
	pc := probe.Config{Model: kv.DefaultModel, Tiers: probe.Tiers, Prefixes: []int{1024, 2048, 4096, 8192, 16384, 32768, 65536}, Reps: DefaultReps, EvictMargin: 1.5, Seed: 1}
	full := probeSimEstimate(pc, probeSimConfig(pc))
	pc.Prefixes = []int{1024, 4096, 16384}
	short := probeSimEstimate(pc, probeSimConfig(pc))
	if !(short > 0 && full > 2*short && full > time.Minute && full < 2*time.Hour) {
		t.Errorf("probe estimates: full %s, short %s", full, short)
	}
	mc := mb1.Config{Model: kv.DefaultModel, Decode: []int{1, 4, 8}, Prefill: []int{2048, 8192, 32768, 65536, 131072}, Reps: DefaultReps, InjectAfter: time.Second, Seed: 1}
	if est := interfereSimEstimate(mc, interfereSimConfig(mc, 8192)); est < 15*3*time.Duration(DefaultReps)*time.Second || est > 3*time.Hour {
		t.Errorf("interfere estimate %s", est)
	}
	t.Logf("probe full %s, short %s", full, short)
	var b strings.Builder
	sayEstimate(&b, "probe", false, 21, 3, short)
	if b.Len() != 0 {
		t.Errorf("a short grid's estimate: %q", b.String())
	}
	sayEstimate(&b, "probe", false, 28, 3, 10*time.Minute)
	if !strings.Contains(b.String(), "kvtier probe: the grid: 28 configurations × 3 reps, estimated 10m0s") {
		t.Errorf("a long grid's estimate: %q", b.String())
	}
}
