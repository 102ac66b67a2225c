package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
)

// A SuiteRun is what a measuring command hands the run lifecycle once
// its input is checked and what it needs is open: the lifecycle creates
// the results directory, runs the suite into it, closes it (summaries,
// end time, plots) and returns the exit status from the one table of
// exit statuses.
type SuiteRun struct {
	Call  *Call         // the command, its arguments and where it writes
	Suite results.Suite // what it writes
	Out   OutputFlags   // --out, --overwrite
	Plots bool          // draw the suite's figures into the directory at the end (Call.Figures)
	// Run measures into out. Error rows do not make it fail: out counts
	// them. Its error ends the run early (a failed write, a cancelled
	// context).
	Run func(ctx context.Context, out *harness.Output) error
}

// Exec runs r and returns the exit status.
func (r SuiteRun) Exec(ctx context.Context) int {
	c := r.Call
	out, err := harness.Create(r.Out.OutDir(), r.Suite.Name, c.CommandLine(), c.Facts, c.Stderr)
	if err != nil {
		return c.UsageErr(option.Wrap("out", err))
	}
	out.Manifest.Environment = ReadEnv(c.Getenv, r.Out.env(c.Env))
	c.Logf("writing %s", out.Dir)
	progress := harness.ProgressOf(c.Stderr)
	progress.Start(c.Name, r.Out.Quiet)
	rerr := r.Run(ctx, out)
	progress.Stop()
	if harness.IsRefused(rerr) && out.Rows() == 0 {
		if err := out.Remove(); err != nil {
			c.Logf("removing %s: %v", out.Dir, err)
		}
		return c.UsageErr(rerr)
	}
	return r.finish(ctx, out, rerr)
}

// finish closes out after the run returned rerr, says what was written
// and returns the exit status.
func (r SuiteRun) finish(ctx context.Context, out *harness.Output, rerr error) int {
	c := r.Call
	interrupted := ctx.Err() != nil
	errRows := out.Errors()
	if c.FinishFacts != nil {
		c.FinishFacts(out.Manifest)
	}
	cerr := out.Close(interrupted || rerr != nil)
	if cerr != nil {
		for _, l := range strings.Split(cerr.Error(), "\n") {
			c.Logf("%s", l) // each of the joined errors on a line of its own
		}
	}
	if r.Plots && c.Figures != nil && !interrupted && rerr == nil {
		r.drawPlots(out)
	}
	if cerr == nil {
		c.Logf("wrote %s (%s)", out.Dir, strings.Join(out.Manifest.Files, ", "))
	}
	main := filepath.Join(out.Dir, r.Suite.Main().Name)
	switch {
	case interrupted:
		c.Logf("interrupted; rows measured so far are kept")
		return ExitInterrupted
	case rerr != nil:
		c.Logf("%v; rows measured so far are kept", rerr)
		return ExitFail
	case cerr != nil:
		c.Logf("rows measured so far are kept in %s", out.Dir)
		return ExitFail
	case errRows > 0:
		c.Logf("%s (see the reason column of %s)", units.Count(errRows, "row is an error", "rows are errors"), main)
		return ExitFail
	}
	fmt.Fprintln(c.Stdout, main)
	return ExitOK
}

// drawPlots draws the directory's figures and records them in the
// manifest.
func (r SuiteRun) drawPlots(out *harness.Output) {
	paths, err := r.Call.Figures(out.Dir)
	for _, p := range paths {
		out.AddFile(p)
	}
	if err != nil {
		r.Call.Logf("warning: plots: %v", err)
	}
	if len(paths) > 0 {
		if err := out.WriteManifest(); err != nil {
			r.Call.Logf("%v", err)
		}
	}
}

// PrintSection prints a report section of the results directory dir on
// stdout once the run wrote it cleanly (code is ExitOK), and returns the
// exit status.
func (c *Call) PrintSection(dir string, code int, section func(io.Writer, *analysis.Run)) int {
	if code != ExitOK {
		return code
	}
	run, err := analysis.Load(dir)
	if err != nil {
		c.Logf("%v", err)
		return ExitFail
	}
	fmt.Fprintln(c.Stdout)
	section(c.Stdout, run)
	return code
}
