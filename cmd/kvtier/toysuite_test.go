package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
)

// toySuite is a suite this test file alone declares: one file, its
// columns, and a figure.
var toySuite = results.Suite{Name: "toy", Title: "Toy suite", Command: "kvtier toy", Order: 1000,
	Files: []results.File{{Name: "toy.csv", Keys: []string{"mode", "size"},
		Columns: []results.Column{results.Text("mode", "the toy's mode"), results.Int("size", "B", "bytes the toy pretends to move"),
			results.Text("timing", "the Sampler's timer kind"), results.Bool("held", "the Sampler's held stream")}}},
	Figures: []results.Figure{{Name: "toy_time", Title: "Toy: time vs size", X: "size", Series: []string{"mode"}, LogX: true}},
}

// Adding a suite is its declaration and one registration line each:
// nothing in cmd/kvtier, report or plots names the toy. Its report
// section, headline and a figure of its own register from here too.
func init() {
	results.RegisterSuite(toySuite)
	cli.Register(&cli.Command{Name: "toy", Order: 1000, Run: cli.Bound(runToy),
		Summary: "a toy suite a test registers", Usage: "Usage: kvtier toy [flags]"})
	report.RegisterSection(report.Section{Suite: toySuite.Name, Write: writeToy, Figures: "toy_"})
	report.RegisterHeadline(report.Headline{Suite: toySuite.Name, Write: toyHeadline})
	plots.Register(toySuite.Name, drawToy)
}

// writeToy is the toy's section: its rows per mode, in a table.
func writeToy(w io.Writer, run *analysis.Run) {
	report.Paragraph(w, "The toy's own section: its ok rows per mode.")
	keys, groups := analysis.GroupBy(run.Rows(toySuite.Name), func(r results.Row) string { return r.Get("mode") }, strings.Compare)
	t := report.NewTable("mode", "ok rows")
	for _, k := range keys {
		t.Add(k, fmt.Sprint(len(analysis.Column(groups[k], analysis.Seconds))))
	}
	t.Write(w)
}

// toyHeadline is the toy's line in the headline.
func toyHeadline(runs []*analysis.Run) (string, string) {
	return fmt.Sprintf("the toy moved nothing in %d rows.", len(report.AllRows(runs, toySuite.Name))), ""
}

// drawToy draws the toy's own figure: its time against size per mode.
func drawToy(dir string, run *analysis.Run, res *plots.Result) error {
	keys, groups := analysis.GroupBy(run.Rows(toySuite.Name), func(r results.Row) string { return r.Get("mode") }, strings.Compare)
	ss := plots.SeriesOf(keys, groups, func(k string) string { return k }, plots.BytesX, plots.OKSeconds)
	f, err := plots.SeriesFigure(res, ss, "toy.csv has no ok rows", "Toy: its own figure", "size (bytes)", "time")
	if f == nil || err != nil {
		return err
	}
	f.LogX(plots.BytesLabel, true)
	f.LogY(plots.SecLabel)
	return plots.Emit(dir, "toy_own", f, res)
}

// toyFlags are the toy's flags: the shared output and repetition groups.
type toyFlags struct {
	out    cli.OutputFlags
	policy cli.PolicyFlags
}

func (f *toyFlags) Bind(fs *pflag.FlagSet, _ *cli.Call) {
	f.out.Add(fs)
	f.policy.Add(fs, harness.Policy{Reps: 3}, false)
}

func (f *toyFlags) Resolve() (harness.Policy, error) {
	p, err := f.policy.Policy()
	return p, errors.Join(err, p.Validate(false), f.out.Check())
}

// toyTimer "times" a sample as a fixed number of seconds: no clock.
type toyTimer struct{ sec float64 }

func (t toyTimer) Start() error           { return nil }
func (t toyTimer) Stop() (float64, error) { return t.sec, nil }
func (t toyTimer) Kind() string           { return "clock" }

// runToy measures two modes at two sizes through the Sampler into the
// run lifecycle's results directory.
func runToy(ctx context.Context, c *cli.Call, f *toyFlags, p harness.Policy) int {
	return cli.SuiteRun{Call: c, Suite: toySuite, Out: f.out, Plots: true,
		Run: func(ctx context.Context, out *harness.Output) error {
			sink, err := out.Open(toySuite.Main())
			if err != nil {
				return err
			}
			s := &harness.Sampler{Suite: toySuite.Name, Sink: sink, Policy: p}
			for i, mode := range []string{"fast", "slow"} {
				for _, size := range []int64{1 << 10, 1 << 20} {
					r := results.Row{Suite: toySuite.Name, Backend: "host", Transport: "none", Bytes: size}
					r.Set("mode", mode)
					r.Set("size", size)
					tc := harness.Case{Row: r, Label: fmt.Sprint(mode, size), Timer: toyTimer{float64(size) * float64(i+1) * 1e-9},
						Fetch: func(context.Context) error { return nil }}
					if _, err := s.Measure(ctx, tc); err != nil {
						return err
					}
				}
			}
			return nil
		}}.Exec(ctx)
}

// TestToySuite: a suite declared and registered in this file alone is
// listed by kvtier help, runs and writes its rows through the run
// lifecycle, and gets its own report section, headline line and figure
// besides the figure it declares.
func TestToySuite(t *testing.T) {
	t.Parallel()
	if stdout, _ := mustRunCLI(t, "--help"); !strings.Contains(stdout, "toy        a toy suite a test registers") {
		t.Errorf("kvtier help does not list the toy:\n%s", stdout)
	}
	dir := filepath.Join(t.TempDir(), "run")
	mustRunCLI(t, "toy", "--out", dir, "--warmup", "0")
	rows, _, err := results.ReadCSV(filepath.Join(dir, "toy.csv"))
	if err != nil || len(rows) != 12 {
		t.Fatalf("toy.csv: %d rows, %v; want 2 modes × 2 sizes × 3 reps", len(rows), err)
	}
	if r := rows[len(rows)-1]; r.Get("mode") != "slow" || r.Get("size") != "1048576" || r.Status != results.StatusOK {
		t.Errorf("last row %+v", r)
	}
	for _, fig := range []string{"toy_time.png", "toy_own.png"} {
		if _, err := os.Stat(filepath.Join(dir, "plots", fig)); err != nil {
			t.Errorf("the toy's figure %s was not drawn: %v", fig, err)
		}
	}
	stdout, _ := mustRunCLI(t, "report", "--print", dir)
	for _, want := range []string{"## Toy suite", "The toy's own section", "In every row: ok rows: 6.", "| slow |", "the toy moved nothing in 12 rows.", "toy_time.png", "toy_own.png"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("REPORT.md lacks %q:\n%s", want, stdout)
		}
	}
}
