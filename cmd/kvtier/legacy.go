package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/results"
)

// The names below let the commands still written here (the HTTP and
// capacity commands, until they move into their suites' packages) run on
// package cli unchanged. They add nothing of their own.

const (
	exitOK          = cli.ExitOK
	exitFail        = cli.ExitFail
	exitUsage       = cli.ExitUsage
	exitInterrupted = cli.ExitInterrupted
)

const aliasOf = cli.AliasOf

var (
	alias      = cli.Alias
	usageErr   = cli.UsageErr
	newFlagSet = cli.NewFlagSet
)

func parseFlags(fs *pflag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	return cli.ParseFlags(fs, args, stderr, os.Getenv)
}

func parseNoArgs(fs *pflag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	return cli.ParseNoArgs(fs, args, stderr, os.Getenv)
}

func parseOptions[T any](fs *pflag.FlagSet, args []string, stderr io.Writer, resolve func() (T, error)) (T, int, bool) {
	return cli.ParseOptions(fs, args, stderr, os.Getenv, resolve)
}

func listFlag[T any](errs *[]error, name, value string, parse func(string) (T, error), fallback ...T) []T {
	return cli.ListFlag(errs, name, value, parse, fallback...)
}

func durationFlag(errs *[]error, name, value string) time.Duration {
	return cli.DurationFlag(errs, name, value)
}

func parseDuration(s string) (time.Duration, error) { return cli.ParseDuration(s) }

func addIdleTimeout(fs *pflag.FlagSet, p *time.Duration) { cli.AddIdleTimeout(fs, p) }

type durationValue struct{ d *time.Duration }

func (v durationValue) String() string     { return cli.DurationValue{D: v.d}.String() }
func (v durationValue) Set(s string) error { return cli.DurationValue{D: v.d}.Set(s) }
func (v durationValue) Type() string       { return "duration" }

type zeroDurationValue struct{ d *time.Duration }

func (v zeroDurationValue) String() string     { return cli.ZeroDurationValue{D: v.d}.String() }
func (v zeroDurationValue) Set(s string) error { return cli.ZeroDurationValue{D: v.d}.Set(s) }
func (v zeroDurationValue) Type() string       { return "duration" }

type outputFlags struct{ cli.OutputFlags }

func (f *outputFlags) add(fs *pflag.FlagSet) { f.Add(fs) }
func (f *outputFlags) check() error          { return f.Check() }

// A suiteRun is cli.SuiteRun for a command written here.
type suiteRun struct {
	cmd   string
	suite results.Suite
	out   outputFlags
	args  []string
	plots bool
	run   func(ctx context.Context, out *harness.Output) error
}

func (r suiteRun) exec(ctx context.Context, stdout, stderr io.Writer) int {
	c := &cli.Call{Command: &cli.Command{Name: r.cmd}, Args: r.args, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv}
	return cli.SuiteRun{Call: c, Suite: r.suite, Out: r.out.OutputFlags, Plots: r.plots, Run: r.run}.Exec(ctx)
}
