package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
)

// Exit statuses: one table for every command (README "Exit status").
const (
	exitOK          = 0   // every row ok or skipped
	exitFail        = 1   // some rows are errors, or a write failed
	exitUsage       = 2   // bad input, or nothing could start; one line on stderr
	exitInterrupted = 130 // SIGINT, SIGTERM, SIGHUP or a broken pipe; rows measured so far are kept
)

// usageErr prints one line naming the command and the problem, with
// every option.Error as "--field: problem", and returns exitUsage. Every
// bad-input path of every command ends here.
func usageErr(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "kvtier %s: %s\n", cmd, option.Render(err, func(f string) string { return "--" + f }))
	return exitUsage
}

// parseOnly, set by tests, stops every command before it opens,
// measures or writes anything, with exitOK: parseFlags once the flags
// have parsed (stopAfterFlags, the check of the documentation's command
// lines), parseOptions once they are resolved into options as well
// (stopAfterOptions, the check of every value the flags' help names).
var parseOnly int

// Levels of parseOnly.
const (
	stopAfterFlags   = 1
	stopAfterOptions = 2
)

// parseFlags parses args into fs, a command's flag set named after the
// command. ok is false when the command must return code at once: exitOK
// after -h/--help (pflag has printed the usage), exitUsage after a bad flag
// (one line on stderr). Positional arguments are left in fs.Args().
func parseFlags(fs *pflag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK, false
		}
		return usageErr(stderr, fs.Name(), suggestFlag(fs, err)), false
	}
	if err := checkAliases(fs); err != nil {
		return usageErr(stderr, fs.Name(), err), false
	}
	if err := ibQoSFromEnv(fs, os.Getenv); err != nil {
		return usageErr(stderr, fs.Name(), err), false
	}
	if parseOnly == stopAfterFlags {
		return exitOK, false
	}
	return exitOK, true
}

// suggestFlag adds the nearest flag's name to pflag's "unknown flag:
// --name" error.
func suggestFlag(fs *pflag.FlagSet, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Deprecated == "" && !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := didYouMean(name, names); s != "" {
		return fmt.Errorf("%w%s", err, strings.Replace(s, `"`, `"--`, 1))
	}
	return err
}

// parseNoArgs is parseFlags for a command that takes no positional
// arguments: the first one is bad input.
func parseNoArgs(fs *pflag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		return usageErr(stderr, fs.Name(), fmt.Errorf("unexpected argument %q", fs.Arg(0))), false
	}
	return exitOK, true
}

// A suiteRun is what a measuring command hands the run lifecycle once its
// input is checked and what it needs is open: the lifecycle creates the
// results directory, runs the suite into it, closes it (summaries, end
// time, plots) and returns the exit status from the one table above.
type suiteRun struct {
	cmd   string        // the command's name, for messages
	suite results.Suite // what it writes
	out   outputFlags   // --out, --overwrite
	args  []string      // the command line after the command's name
	plots bool          // draw the suite's plots into the directory at the end
	// run measures into out. Error rows do not make it fail: out counts
	// them. Its error ends the run early (a failed write, a cancelled
	// context).
	run func(ctx context.Context, out *harness.Output) error
}

// exec runs r and returns the exit status.
func (r suiteRun) exec(ctx context.Context, stdout, stderr io.Writer) int {
	command := append([]string{"kvtier", r.cmd}, r.args...)
	out, err := harness.Create(r.out.outDir(), r.suite.Name, command, collectSystem, stderr)
	if err != nil {
		return usageErr(stderr, r.cmd, option.Wrap("out", err))
	}
	fmt.Fprintf(stderr, "kvtier %s: writing %s\n", r.cmd, out.Dir)
	rerr := r.run(ctx, out)
	if harness.IsRefused(rerr) && out.Rows() == 0 {
		if err := out.Remove(); err != nil {
			fmt.Fprintf(stderr, "kvtier %s: removing %s: %v\n", r.cmd, out.Dir, err)
		}
		return usageErr(stderr, r.cmd, rerr)
	}
	return r.finish(ctx, stdout, stderr, out, rerr)
}

// finish closes out after the run returned rerr, says what was written
// and returns the exit status.
func (r suiteRun) finish(ctx context.Context, stdout, stderr io.Writer, out *harness.Output, rerr error) int {
	interrupted := ctx.Err() != nil
	errRows := out.Errors()
	cerr := out.Close(interrupted || rerr != nil)
	if cerr != nil {
		fmt.Fprintf(stderr, "kvtier %s: %v\n", r.cmd, cerr)
	}
	if r.plots && !interrupted && rerr == nil {
		r.drawPlots(stderr, out)
	}
	fmt.Fprintf(stderr, "kvtier %s: wrote %s (%s)\n", r.cmd, out.Dir, strings.Join(out.Manifest.Files, ", "))
	main := filepath.Join(out.Dir, r.suite.Main().Name)
	switch {
	case interrupted:
		fmt.Fprintf(stderr, "kvtier %s: interrupted; rows measured so far are kept\n", r.cmd)
		return exitInterrupted
	case rerr != nil:
		fmt.Fprintf(stderr, "kvtier %s: %v; rows measured so far are kept\n", r.cmd, rerr)
		return exitFail
	case cerr != nil:
		return exitFail
	case errRows > 0:
		fmt.Fprintf(stderr, "kvtier %s: %d rows are errors (see the reason column of %s)\n", r.cmd, errRows, main)
		return exitFail
	}
	fmt.Fprintln(stdout, main)
	return exitOK
}

// drawPlots draws the directory's plots and records them in the manifest.
func (r suiteRun) drawPlots(stderr io.Writer, out *harness.Output) {
	paths, err := plots.Dir(out.Dir)
	for _, p := range paths {
		out.AddFile(p)
	}
	if err != nil {
		fmt.Fprintf(stderr, "kvtier %s: warning: plots: %v\n", r.cmd, err)
	}
	if len(paths) > 0 {
		if err := out.WriteManifest(); err != nil {
			fmt.Fprintf(stderr, "kvtier %s: %v\n", r.cmd, err)
		}
	}
}

// newFlagSet returns the flag set of the command called name: errors and
// -h go to stderr, -h printing usage (its first lines) and the flags.
func newFlagSet(name, usage string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseOptions parses args (no positional ones) into fs and resolves the
// command's options with resolve, reporting bad input as usageErr does.
// ok is false when the command must return code at once.
func parseOptions[T any](fs *pflag.FlagSet, args []string, stderr io.Writer, resolve func() (T, error)) (opts T, code int, ok bool) {
	if code, ok := parseNoArgs(fs, args, stderr); !ok {
		return opts, code, false
	}
	opts, err := resolve()
	if err != nil {
		return opts, usageErr(stderr, fs.Name(), err), false
	}
	if parseOnly == stopAfterOptions {
		return opts, exitOK, false
	}
	return opts, exitOK, true
}
