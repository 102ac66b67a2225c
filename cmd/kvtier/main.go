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
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/units"
)

func main() { os.Exit(run(os.Stdout, os.Stderr, os.Args[1:])) }

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran but a measurement or write failed
	exitUsage = 2 // bad input: flags, files, endpoints; one line on stderr
)

// A command is one kvtier subcommand. run gets the arguments after the
// command's name and returns the exit status; ctx is cancelled on SIGINT
// or SIGTERM, after which a command stops measuring and keeps what it
// has written.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, stdout, stderr io.Writer, args []string) int
}

// commands lists the subcommands in the order help shows them.
func commands() []command {
	return []command{
		{"info", "what this machine has: CPU, NUMA, memory, GPUs, RDMA NICs, libraries", runInfo},
		{"geometry", "KV geometry of a model: bytes per token and block, chunks per layout", runGeometry},
		{"sweep", "the tier sweep: fetch a reused prefix from hbm, host, remote, recompute", runSweep},
		{"serve", "a peer holding a KV pool for the remote tier and transfers", runServe},
		{"transfer", "MB2: KV transfer bandwidth vs size against a peer", runTransfer},
		{"sim", "a simulated vLLM server (OpenAI API, prefix cache, offload, P/D)", runSim},
		{"probe", "four-tier TTFT of a reused prefix against a vLLM server", runProbe},
		{"interfere", "MB1: decode stall caused by a prefill on the same server", runInterfere},
		{"trace", "a trace's reuse, APC ceiling, exact LRU hit ratio vs capacity, working set", runTrace},
		{"plan", "tier capacities for a trace: hit share per tier and predicted TTFT", runPlan},
		{"plot", "plots (PNG and SVG) of every suite in a results directory", runPlot},
		{"report", "REPORT.md: tables, tier cost model, break-even prefixes", runReport},
		{"compare", "change in p50 between two runs, with a significance test", runCompare},
		{"bench2csv", "turn `go test -bench` output into kvtier rows", runBench2CSV},
	}
}

func run(stdout, stderr io.Writer, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return dispatch(ctx, stdout, stderr, args)
}

func dispatch(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help":
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, stdout, stderr, args[1:])
		}
	}
	fmt.Fprintf(stderr, "kvtier: unknown command %q (run kvtier help)\n", name)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "kvtier measures the cost of bringing a reused KV-cache prefix back to the GPU.")
	fmt.Fprintln(w, "\nUsage: kvtier <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun kvtier <command> -h for a command's flags.")
}

// usageErr prints one line naming the command and the problem and returns
// exitUsage. Every bad-input path of every command ends here.
func usageErr(stderr io.Writer, cmd string, err error) int {
	msg := strings.TrimSpace(err.Error())
	msg = strings.ReplaceAll(msg, "\n", "; ")
	fmt.Fprintf(stderr, "kvtier %s: %s\n", cmd, msg)
	return exitUsage
}

// parseFlags parses args into fs, a command's flag set named after the
// command. ok is false when the command must return code at once: exitOK
// after -h/--help (pflag has printed the usage), exitUsage after a bad flag
// (one line on stderr). Positional arguments are left in fs.Args().
func parseFlags(fs *pflag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK, false
		}
		return usageErr(stderr, fs.Name(), err), false
	}
	return exitOK, true
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

// defaultOut is the default --out of the measuring commands: a directory
// under results/ named for the UTC time the command started.
func defaultOut() string {
	return filepath.Join("results", time.Now().UTC().Format("20060102T150405Z"))
}

// finishRun closes out after a suite's run returned rerr (marking the run
// interrupted when rerr is not nil), says on stderr what was written and
// returns the exit status: exitInterrupted when ctx was cancelled,
// exitFail when the run or the closing failed, else exitOK after printing
// the path of the suite's file on stdout.
func finishRun(ctx context.Context, stdout, stderr io.Writer, cmd string, out *harness.Output, file string, rerr error) int {
	cerr := out.Close(rerr != nil)
	if cerr != nil {
		fmt.Fprintf(stderr, "kvtier %s: %v\n", cmd, cerr)
	}
	fmt.Fprintf(stderr, "kvtier %s: wrote %s (%s)\n", cmd, out.Dir, strings.Join(out.Manifest.Files, ", "))
	switch {
	case rerr != nil && ctx.Err() != nil:
		fmt.Fprintf(stderr, "kvtier %s: interrupted; rows measured so far are kept\n", cmd)
		return exitInterrupted
	case rerr != nil:
		fmt.Fprintf(stderr, "kvtier %s: %v\n", cmd, rerr)
		return exitFail
	case cerr != nil:
		return exitFail
	}
	fmt.Fprintf(stdout, "%s\n", filepath.Join(out.Dir, file))
	return exitOK
}

// listFlag parses the comma-separated value of the flag called name with
// parse. A value that does not parse adds "name: error" to errs and yields
// fallback, a valid placeholder, so that the options' Validate does not
// report the same flag a second time.
func listFlag[T any](errs *[]error, name, value string, parse func(string) (T, error), fallback ...T) []T {
	v, err := units.ParseList(value, parse)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("%s: %w", name, err))
		return fallback
	}
	return v
}
