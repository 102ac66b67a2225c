package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/report/reporttest"
)

func loadSynth(t *testing.T, o reporttest.Options) *analysis.Run {
	t.Helper()
	r, err := analysis.Load(reporttest.TempDir(t, o))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCompareSameDistribution(t *testing.T) {
	t.Parallel()
	sweep := []string{sweep.File}
	// At alpha 0.05 each configuration is a false positive one time in
	// twenty or so (over 20 seed pairs the generator gave 15 of 460, 3.3%);
	// the seeds are fixed so that the test is deterministic, and seeds 100
	// and 101 happen to give none.
	old := loadSynth(t, reporttest.Options{Seed: 100, Reps: 10, Suites: sweep})
	new := loadSynth(t, reporttest.Options{Seed: 101, Reps: 10, Suites: sweep})
	changes := report.Compare(old, new)
	if len(changes) == 0 {
		t.Fatal("no configurations compared")
	}
	for _, c := range changes {
		if c.Significant {
			t.Errorf("%s: flagged %s (p=%.3f) between two runs of one distribution", c.Config, c.Delta, c.P)
		}
		if c.Delta != "~" {
			t.Errorf("%s: delta %q, want ~", c.Config, c.Delta)
		}
	}
}

func TestCompareFlagsSlowTier(t *testing.T) {
	t.Parallel()
	old := loadSynth(t, reporttest.Options{Seed: 100, Reps: 10})
	new := loadSynth(t, reporttest.Options{Seed: 101, Reps: 10, Slow: map[string]float64{"remote": 2}})
	changes := report.Compare(old, new)
	flagged := 0
	for _, c := range changes {
		slowed := c.Suite == "sweep" && strings.HasPrefix(c.Config, "remote layerwise batch cuda")
		if slowed {
			flagged++
			if !c.Significant || !strings.HasPrefix(c.Delta, "+") {
				t.Errorf("%s: %s p=%.3f, want a significant slowdown", c.Config, c.Delta, c.P)
			}
			if r := c.New.P50 / c.Old.P50; r < 1.8 || r > 2.2 {
				t.Errorf("%s: new/old p50 = %.2f, want about 2", c.Config, r)
			}
		} else if c.Significant {
			t.Errorf("%s (%s): flagged %s p=%.3f, only the remote tier was slowed", c.Config, c.Suite, c.Delta, c.P)
		}
	}
	if flagged != len(reporttest.Prefixes) {
		t.Errorf("%d remote configurations compared, want %d", flagged, len(reporttest.Prefixes))
	}
	var out bytes.Buffer
	report.WriteComparison(&out, "old", "new", changes)
	if !strings.Contains(out.String(), "4 of ") || !strings.Contains(out.String(), "changed significantly") {
		t.Errorf("summary line missing or wrong:\n%s", out.String())
	}
}

func TestCompareTooFewSamples(t *testing.T) {
	t.Parallel()
	sweep := []string{sweep.File}
	old := loadSynth(t, reporttest.Options{Seed: 1, Reps: 2, Suites: sweep})
	new := loadSynth(t, reporttest.Options{Seed: 2, Reps: 2, Suites: sweep, Slow: map[string]float64{"host": 3}})
	for _, c := range report.Compare(old, new) {
		if c.Significant {
			t.Errorf("%s: significant with n=2+2", c.Config)
		}
		if !strings.Contains(c.Note, "too few samples") {
			t.Errorf("%s: note %q does not say n is too small", c.Config, c.Note)
		}
	}
}
