package sweep

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
)

// The run says first how many configurations run, on what, and how many
// are skipped, one line per reason with its count; the skipped rows are
// written without a line each.
func TestPreflightSaysOncePerReason(t *testing.T) {
	t.Parallel()
	o := tinyOptions(t)
	o.Tiers = []string{"hbm", "host"}
	o.Layouts = []kv.Layout{kv.Layerwise}
	o.Copy = []tiers.CopyMode{tiers.PerCopy, tiers.Batch}
	o.Prefixes = []int{16, 32}
	_, rows, log, err := runSweep(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	want := []string{
		"kvtier sweep: 8 configurations (tier × layout × copy × prefix): 2 run on the host stand-in",
		"kvtier sweep:   4 skipped: no device memory on the host backend",
		"kvtier sweep:   2 skipped: copy mode batch needs cuMemcpyBatchAsync",
	}
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Fatalf("log line %d, want %q:\n%s", i+1, w, log)
		}
	}
	if n := strings.Count(log, "no device memory"); n != 1 {
		t.Errorf("the hbm reason is said %d times:\n%s", n, log)
	}
	skipped := 0
	for _, r := range rows {
		if r.Status == results.StatusSkipped {
			skipped++
		}
	}
	if skipped != 6 || len(rows) != 6+2*o.Policy.Reps {
		t.Errorf("%d rows, %d skipped: want every skipped configuration's row", len(rows), skipped)
	}
}

// A plain sweep without a GPU measures the stand-in's grid and says so;
// a --prefix or --layout given is kept.
func TestStandInGrid(t *testing.T) {
	t.Parallel()
	b, err := tiers.OpenHost(tiers.BackendConfig{NUMA: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, c := range []struct {
		args   []string
		narrow bool
	}{{nil, true}, {[]string{"--prefix", "16"}, false}, {[]string{"--layout", "blockwise"}, false}} {
		fs := pflag.NewFlagSet("sweep", pflag.ContinueOnError)
		var f flags
		f.Bind(fs, &cli.Call{})
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		o := DefaultOptions()
		note := f.standInGrid(b, &o)
		if got := note != "" && slices.Equal(o.Prefixes, StandInPrefixes) && slices.Equal(o.Layouts, StandInLayouts); got != c.narrow {
			t.Errorf("%v: narrowed %v (%q), want %v", c.args, got, note, c.narrow)
		}
		if c.narrow && !strings.Contains(note, "--prefix 1k,4k --layout layerwise") {
			t.Errorf("note %q does not give the grid as flags", note)
		}
	}
}
