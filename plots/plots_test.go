package plots_test

import (
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness/mb1"
	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/harness/transfer"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/report/reporttest"
	"gonum.org/v1/plot/plotter"
)

func TestDrawAllSuites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if p := os.Getenv("KVTIER_PLOT_DIR"); p != "" {
		dir = p
	}
	if err := reporttest.WriteDir(dir, reporttest.Options{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	res, err := plots.Draw(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The default directory holds the device and serving suites, not a
	// trace or a plan.
	if !slices.Contains(res.NotRun, "trace.csv") || !slices.Contains(res.NotRun, "plan.csv") || slices.Contains(res.NotRun, "sweep.csv") || len(res.Absent) != 0 {
		t.Errorf("with every device and serving suite present: not run %q, absent %q", res.NotRun, res.Absent)
	}
	want := []string{"sweep_tiers", "costmodel_hbm", "costmodel_host", "costmodel_remote", "costmodel_recompute",
		"probe_ttft", "mb1_penalty", "mb1_timeline_D1_P32768", "mb1_timeline_D8_P32768", "transfer_bw",
		"mesh_matrix_net_blockwise_67108864", "mesh_matrix_net_blockwise_1073741824", "mesh_intra_inter"}
	for _, w := range want {
		for _, ext := range []string{".png", ".svg"} {
			p := filepath.Join(dir, "plots", w+ext)
			if !slices.Contains(res.Files, p) {
				t.Errorf("%s not in the files written", p)
			}
		}
	}
	if len(res.Files) != 2*len(want)+1 {
		t.Errorf("wrote %d files, want %d and the index: %q", len(res.Files), 2*len(want), res.Files)
	}
	for _, f := range res.Files {
		switch filepath.Ext(f) {
		case ".png":
			checkPNG(t, f)
		case ".svg":
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "<svg") || len(b) < 2000 {
				t.Errorf("%s: not an SVG with content (%d bytes)", f, len(b))
			}
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "plots", "sweep_tiers.svg"))
	if !strings.Contains(string(svg), "host stand-in (CPU)") {
		t.Error("sweep plot does not mark the host stand-in in its legend")
	}
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() < 800 || b.Dx() > 1200 || b.Dy() < 550 || b.Dy() > 1400 {
		t.Errorf("%s: %dx%d px, want about 900 wide and 600-1000 high", path, b.Dx(), b.Dy())
	}
}

func TestDrawSweepOnly(t *testing.T) {
	t.Parallel()
	dir := reporttest.TempDir(t, reporttest.Options{Seed: 4, Small: true, Suites: []string{sweep.File}})
	res, err := plots.Draw(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{probe.File, mb1.File, transfer.File} {
		if !slices.Contains(res.NotRun, f) {
			t.Errorf("NotRun does not name %s: %q", f, res.NotRun)
		}
	}
	for _, f := range res.Files {
		if b := filepath.Base(f); !strings.HasPrefix(b, "sweep_") && !strings.HasPrefix(b, "costmodel_") && b != analysis.FigureIndex {
			t.Errorf("drew %s without its suite", f)
		}
	}
	if len(res.Files) != 5 {
		t.Errorf("wrote %q, want the tier curve and the host cost model, PNG and SVG, and the index", res.Files)
	}
}

func TestDir(t *testing.T) {
	t.Parallel()
	if _, err := plots.Dir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no kvtier CSV") {
		t.Errorf("empty dir: err = %v", err)
	}
	dir := reporttest.TempDir(t, reporttest.Options{Seed: 5, Suites: []string{transfer.File}})
	files, err := plots.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "plots", "transfer_bw.png"), filepath.Join(dir, "plots", "transfer_bw.svg"), filepath.Join(dir, "plots", analysis.FigureIndex)}
	if !slices.Equal(files, want) {
		t.Errorf("Dir = %q, want %q", files, want)
	}
}

// A value a log axis cannot show (zero or negative: a corrupt CSV's, a
// server's) is left off the figure: kvtier plot panicked on a probe.csv
// with a prefix_tokens of -5.
func TestLogAxesTakeAnyValue(t *testing.T) {
	t.Parallel()
	f := plots.NewFigure("t", "prefix length L (tokens)", "time to first token")
	if err := f.Line(plotter.XYs{{X: -5, Y: 1}, {X: 0, Y: 0.2}, {X: 1024, Y: 0.5}, {X: 2048, Y: -1}}, 0, false, "s"); err != nil {
		t.Fatal(err)
	}
	f.LogX(plots.TokensLabel, true)
	f.TicksAt([]float64{-5, 0, 1024, 2048}, plots.TokensLabel)
	f.LogY(plots.SecLabel)
	if x, y := f.P.X, f.P.Y; !(x.Min > 0 && x.Min < 1024 && x.Max >= 2048 && y.Min > 0 && y.Min < 0.2 && y.Max >= 1) {
		t.Errorf("axes x %g–%g, y %g–%g: want them over the positive data", x.Min, x.Max, y.Min, y.Max)
	}
	if err := plots.Emit(t.TempDir(), "f", f, &plots.Result{}); err != nil {
		t.Fatal(err)
	}
}
