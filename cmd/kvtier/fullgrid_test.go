package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFullGridSaysEstimate: every --sim run says how long it will take
// before it starts, --full saying it is the full grid. Before, a full
// grid started without a word on its duration, and a short grid's
// estimate (the README's quick start) was nowhere to be read.
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
		if full := strings.Contains(first, ": --full: "); !strings.Contains(first, "estimated ") || full != c.want {
			t.Errorf("%v: first line %q: want the estimate, --full said %v", c.args, first, c.want)
		}
	}
}
