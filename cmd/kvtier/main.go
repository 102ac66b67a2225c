// Command kvtier measures what it costs an LLM serving engine to bring a
// reused KV-cache prefix back to the GPU from HBM, host memory, a remote
// peer or by recomputing it, and how much prefill stalls decode.
//
// Usage:
//
//	kvtier <command> [flags]
//
// Run "kvtier help" for the list of commands and "kvtier <command> -h" for
// the flags of one.
//
// kvtier is a driver: each command is a cli.Command registered from an
// init function, a suite's in the suite's package (harness/sweep's
// command.go); the blank imports below bring them in.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	_ "github.com/kvtier/kvtier/harness/suites"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/tiers/tierflag"
	_ "github.com/kvtier/kvtier/vllmsim/command"
)

func main() { os.Exit(run(os.Stdout, os.Stderr, os.Args[1:])) }

// endSignals are the signals that end a command the way Ctrl-C does:
// SIGHUP is an ssh session that went away.
var endSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// run runs a command. The first SIGINT, SIGTERM or SIGHUP cancels its
// context: the command stops, removes its scratch files, keeps what it
// measured and exits 130. A second one kills the process at once (the
// signal's default action restored), for a command stuck where no context
// reaches: a hung driver call, a FIFO opened as a trace with no writer.
// A broken pipe on stdout (kvtier ... | head) cancels the context too:
// SIGPIPE is caught, so such a write fails with EPIPE instead of killing
// kvtier before it has cleaned up. A broken pipe on stderr (kvtier ...
// 2>&1 | head) only silences it: progress and messages stop, the
// measurement goes on and its rows are written.
func run(stdout, stderr io.Writer, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), endSignals...)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return dispatch(ctx, brokenPipe{w: stdout, cancel: cancel}, brokenPipe{w: stderr, gone: new(atomic.Bool)}, args)
}

// A brokenPipe is a writer whose EPIPE (its reader went away) cancels the
// command, or, with gone set, silences the writer for good (each later
// write is dropped as if written). SIGPIPE itself cannot say which pipe
// broke: a socket's raises it too.
type brokenPipe struct {
	w      io.Writer
	cancel context.CancelFunc
	gone   *atomic.Bool
}

// Fd is the file descriptor of the writer beneath, so that a terminal is
// still seen as one; ^0 where it is not a file.
func (b brokenPipe) Fd() uintptr {
	if f, ok := b.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

func (b brokenPipe) Write(p []byte) (int, error) {
	if b.gone != nil && b.gone.Load() {
		return len(p), nil
	}
	n, err := b.w.Write(p)
	switch {
	case !errors.Is(err, syscall.EPIPE):
	case b.gone != nil:
		b.gone.Store(true)
		return len(p), nil
	default:
		b.cancel()
	}
	return n, err
}

// dispatch runs the command args name with the rest of args. Its stderr
// is a harness.Progress over the one given: the run lifecycle starts its
// reports once the input is valid, and every message written to it
// clears the status line first.
func dispatch(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	if harness.ProgressOf(stderr) == nil {
		stderr = harness.NewProgress(stderr)
	}
	if len(args) == 0 {
		usage(stderr)
		return cli.ExitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help":
		usage(stdout)
		return cli.ExitOK
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "kvtier", version())
		return cli.ExitOK
	}
	c, ok := cli.Lookup(name)
	if !ok {
		names := append(commandNames(), "help", "version")
		fmt.Fprintf(stderr, "kvtier: unknown command %q%s (run kvtier help)\n", name, cli.DidYouMean(name, names))
		return cli.ExitUsage
	}
	noteScriptEnv(stderr, name, args[1:], os.LookupEnv)
	call := &cli.Call{Command: c, Args: args[1:], Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv, Figures: plots.Dir}
	call.Facts = func(m *results.Manifest) []error { return system.Collect(sysConfig(call, "/"), m) }
	call.FinishFacts = func(m *results.Manifest) { system.Finish(sysConfig(call, "/"), m) }
	return c.Run(ctx, call)
}

// sysConfig is where the machine's facts are read for the call: root
// for sysfs and procfs, and the native libraries its environment names.
func sysConfig(c *cli.Call, root string) system.Config {
	return system.Config{Root: root, Libs: tierflag.Libraries(c.Getenv)}
}

// commandNames are the names of the registered commands.
func commandNames() []string {
	var names []string
	for _, c := range cli.Commands() {
		names = append(names, c.Name)
	}
	return names
}

// noteScriptEnv says, for each variable the command's ScriptEnv names
// that is set and whose flag args do not give, that the binary does not
// read it, so that it is not silently ignored.
func noteScriptEnv(stderr io.Writer, cmd string, args []string, lookup func(string) (string, bool)) {
	c, ok := cli.Lookup(cmd)
	if !ok {
		return
	}
	for _, e := range c.ScriptEnv {
		given := slices.ContainsFunc(args, func(a string) bool { return a == e.Flag || strings.HasPrefix(a, e.Flag+"=") })
		if v, ok := lookup(e.Env); ok && v != "" && !given {
			fmt.Fprintf(stderr, "kvtier %s: %s is read by scripts/bench.sh and go test ./bench, not by kvtier: give %s\n", cmd, e.Env, e.Flag)
		}
	}
}

// usage prints kvtier help: every registered command with its summary.
func usage(w io.Writer) {
	fmt.Fprintln(w, "kvtier measures the cost of bringing a reused KV-cache prefix back to the GPU.")
	fmt.Fprintln(w, "\nUsage: kvtier <command> [flags]\n\nCommands:")
	for _, c := range cli.Commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "version", "kvtier's module version and revision (also --version)")
	fmt.Fprintln(w, "\nRun kvtier <command> -h for a command's flags.")
}
