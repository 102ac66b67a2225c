package sweep

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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
	wantFirstLines(t, log,
		"kvtier sweep: 8 configurations (tier × layout × copy × prefix): 2 run on the host stand-in",
		"kvtier sweep:   4 skipped: no device memory on the host backend",
		"kvtier sweep:   2 skipped: copy mode batch needs cuMemcpyBatchAsync")
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

// Prefixes whose disk file is over --disk-max are counted as skipped in
// the first line, under one reason however many prefixes it stops (the
// shortest's, with the prefixes listed), with no line of their own
// later: the run skips them by the same test before anything is set up.
func TestPreflightCountsDiskMax(t *testing.T) {
	t.Parallel()
	o := diskOptions(t, "pread", false)
	o.Layouts, o.Copy, o.Prefixes = []kv.Layout{kv.Layerwise}, []tiers.CopyMode{tiers.PerCopy}, []int{64, 512, 256}
	o.TierOptions["disk"].(*tiers.DiskOptions).Max = fmt.Sprint(int64(kv.PoolSlots(o.Geometry.Blocks(64))) * o.Geometry.BlockBytes())
	_, rows, log, err := runSweep(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	wantFirstLines(t, log,
		"kvtier sweep: 3 configurations (tier × layout × copy × prefix): 1 run on the host stand-in",
		"kvtier sweep:   2 skipped: the disk tier's file for 16 blocks takes")
	if !strings.Contains(log, "(prefixes 256, 512: the longer take more)") {
		t.Errorf("the reason does not list the prefixes it stops:\n%s", log)
	}
	if n := strings.Count(log, "--disk-max"); n != 1 {
		t.Errorf("the --disk-max reason is said %d times:\n%s", n, log)
	}
	skipped := 0
	for _, r := range rows {
		if r.Status == results.StatusSkipped && strings.Contains(r.Reason, "--disk-max") && r.PrefixTokens >= 256 {
			skipped++
		}
	}
	if skipped != 2 {
		t.Errorf("%d rows skipped over --disk-max, want the 256- and 512-token prefixes'", skipped)
	}
}

// wantFirstLines fails t unless log's first lines begin as want's.
func wantFirstLines(t *testing.T, log string, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Fatalf("log line %d, want %q:\n%s", i+1, w, log)
		}
	}
}

// A configuration whose estimate before calibration is over the budget
// is counted among those that run (the run decides on its calibrated
// estimate) and said once as a likely skip; with a budget it keeps, nothing is.
func TestPreflightSaysLikelyOverBudget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		budget time.Duration
		want   bool
	}{{time.Nanosecond, true}, {time.Hour, false}} {
		o := tinyOptions(t)
		o.Tiers = []string{"recompute"}
		o.Prefixes = []int{16, 32}
		o.Policy.Budget = c.budget
		o.Policy.Reps, o.Policy.Warmup = 1, 0
		_, rows, log, err := runSweep(t, context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		said := strings.Contains(log, "kvtier sweep:   of the 2 that run, 2 likely skipped: estimated over the budget of 1ns per rep before calibration (recompute, up to ")
		if said != c.want {
			t.Errorf("budget %v: likely skips said %v, want %v:\n%s", c.budget, said, c.want, log)
		}
		if c.want {
			for _, r := range rows {
				if r.Status != results.StatusSkipped {
					t.Errorf("budget %v: a row %s where preflight said a likely skip", c.budget, r.Status)
				}
			}
		}
	}
}
