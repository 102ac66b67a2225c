package main

import (
	"path/filepath"
	"strings"
	"testing"
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
