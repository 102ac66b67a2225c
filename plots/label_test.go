package plots_test

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/report/reporttest"
)

// drawTree draws every directory of a bench-like tree, once for the
// tests that read it, and returns the figures the index lists, by name,
// and each figure's SVG text.
func drawTree(t *testing.T) (map[string]analysis.Figure, map[string]string) {
	t.Helper()
	d := drawn()
	if d.err != nil {
		t.Fatal(d.err)
	}
	return d.figs, d.svgs
}

var drawn = sync.OnceValue(func() (d struct {
	figs map[string]analysis.Figure
	svgs map[string]string
	err  error
}) {
	root, err := os.MkdirTemp("", "kvtier-plots-test-")
	if d.err = err; err != nil {
		return d
	}
	defer os.RemoveAll(root) // the SVGs are read into memory
	dirs, err := reporttest.WriteTree(root, reporttest.Options{Seed: 9, Reps: 3})
	if d.err = err; err != nil {
		return d
	}
	d.figs, d.svgs = map[string]analysis.Figure{}, map[string]string{}
	for _, dir := range dirs {
		if _, d.err = plots.Draw(dir); d.err != nil {
			return d
		}
		run, err := analysis.Load(dir)
		if d.err = err; err != nil {
			return d
		}
		for _, f := range run.Figures {
			b, err := os.ReadFile(f.File("svg"))
			if d.err = err; err != nil {
				return d
			}
			d.figs[f.Name], d.svgs[f.Name] = f, string(b)
		}
	}
	return d
})

// TestFiguresLabelled: every figure the index lists says in its title
// what its figures are, and the index says the same; the reference's
// curves are drawn in the four-tier TTFT and MB1 figures, labelled.
func TestFiguresLabelled(t *testing.T) {
	t.Parallel()
	figs, svgs := drawTree(t)
	if len(figs) < 10 {
		t.Fatalf("%d figures indexed, want every one drawn", len(figs))
	}
	notes := map[string]string{analysis.Measured: "(measured", analysis.StandIn: "host stand-in: CPU memory, not a GPU",
		analysis.Simulated: "simulated: kvtier sim, not vLLM", analysis.Predicted: "predicted by a model, not measured", analysis.Reference: analysis.Reference}
	for name, f := range figs {
		if len(f.Kinds) == 0 {
			t.Errorf("%s: no kind in the index", name)
		}
		for _, k := range f.Kinds {
			if !strings.Contains(svgs[name], notes[k]) {
				t.Errorf("%s: indexed as %s but its SVG does not say %q", name, k, notes[k])
			}
		}
	}
	for name, want := range map[string][]string{
		"probe_ttft":    {analysis.Measured, analysis.Reference},
		"mb1_penalty":   {analysis.Simulated, analysis.Reference},
		"plan_ttft_p90": {analysis.Predicted},
		"costmodel_hbm": {analysis.Measured},
		"sweep_tiers":   {analysis.Measured, analysis.StandIn},
	} {
		if !slices.Equal(figs[name].Kinds, want) {
			t.Errorf("%s: kinds %q, want %q", name, figs[name].Kinds, want)
		}
	}
	for name, legends := range map[string][]string{
		"probe_ttft":  {"miss (recompute): " + analysis.Reference, "GPU hit: " + analysis.Reference},
		"mb1_penalty": {"D=1 interfere: " + analysis.Reference, "D=8 interfere: " + analysis.Reference},
	} {
		for _, l := range legends {
			if !strings.Contains(svgs[name], l) {
				t.Errorf("%s: no legend %q", name, l)
			}
		}
	}
	if strings.Contains(svgs["costmodel_hbm"], analysis.Reference) {
		t.Error("costmodel_hbm says it holds the reference's figures")
	}
}

// TestSizeAxesLogScaled: the tick labels of a size or length axis are
// evenly spaced where the sizes grow by a constant factor (16 MiB, 64
// MiB, 256 MiB, 1 GiB, 4 GiB), as on a log scale.
func TestSizeAxesLogScaled(t *testing.T) {
	t.Parallel()
	_, svgs := drawTree(t)
	for name, ticks := range map[string][]string{
		"transfer_bw": {"16 MiB", "64 MiB", "256 MiB", "1 GiB", "4 GiB"},
		"probe_ttft":  {"8k", "16k", "32k", "64k"},
		"sweep_tiers": {"1k", "4k", "16k", "64k"},
	} {
		var xs []float64
		for _, tk := range ticks {
			m := regexp.MustCompile(`<text x="([-\d.]+)"[^>]*\n?[^>]*>` + regexp.QuoteMeta(tk) + `</text>`).FindStringSubmatch(svgs[name])
			if m == nil {
				t.Fatalf("%s: no tick label %q", name, tk)
			}
			x, _ := strconv.ParseFloat(m[1], 64)
			xs = append(xs, x)
		}
		for i := 2; i < len(xs); i++ {
			gap, first := xs[i]-xs[i-1], xs[1]-xs[0]
			// Labels are placed by their start: allow for their widths.
			if math.Abs(gap-first) > 0.15*first {
				t.Errorf("%s: tick labels %q at x=%v: not evenly spaced, the axis is not log-scaled", name, ticks, xs)
				break
			}
		}
	}
}

// TestIndexLists: the index of a directory lists what Draw wrote, with
// the files present.
func TestIndexLists(t *testing.T) {
	t.Parallel()
	dir := reporttest.TempDir(t, reporttest.Options{Seed: 5, Suites: reporttest.Default})
	res, err := plots.Draw(dir)
	if err != nil {
		t.Fatal(err)
	}
	run, err := analysis.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Figures) != len(res.Figures) || len(run.Figures) == 0 {
		t.Fatalf("index lists %d figures, Draw drew %d", len(run.Figures), len(res.Figures))
	}
	for _, f := range run.Figures {
		for _, ext := range []string{"png", "svg"} {
			if _, err := os.Stat(f.File(ext)); err != nil {
				t.Errorf("%s: %v", f.Name, err)
			}
		}
		if f.Suite == "" || f.Title == "" || filepath.Dir(f.File("svg")) != filepath.Join(dir, "plots") {
			t.Errorf("index entry %+v lacks its suite, title or place", f)
		}
	}
}
