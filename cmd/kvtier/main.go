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
	"slices"
	"strings"
	"syscall"
)

func main() { os.Exit(run(os.Stdout, os.Stderr, os.Args[1:])) }

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
		{"sweep", "the tier sweep: fetch a reused prefix from hbm, host, remote, disk, or recompute it", runSweep},
		{"serve", "a peer holding a KV pool for the remote tier and transfers", runServe},
		{"transfer", "MB2: KV transfer bandwidth vs size against a peer", runTransfer},
		{"mesh", "the transfer matrix between every pair of ranks, under srun, mpirun or torchrun", runMesh},
		{"sim", "a simulated vLLM server (OpenAI API, prefix cache, offload, P/D)", runSim},
		{"probe", "four-tier TTFT of a reused prefix against a vLLM server", runProbe},
		{"interfere", "MB1: decode stall caused by a prefill on the same server", runInterfere},
		{"trace", "a trace's reuse, APC ceiling, exact LRU hit ratio vs capacity, working set", runTrace},
		{"plan", "tier capacities for a trace: hit share per tier and predicted TTFT", runPlan},
		{"replay", "send a trace (or multi-turn sessions) to a server: realized vs predicted APC, TTFT", runReplay},
		{"knee", "sweep a server's GPU KV capacity with one workload: the capacity knee", runKnee},
		{"plot", "plots (PNG and SVG) of every suite in a results directory", runPlot},
		{"report", "REPORT.md: tables, tier cost model, break-even prefixes", runReport},
		{"compare", "change in p50 between two runs, with a significance test", runCompare},
		{"bench2csv", "turn `go test -bench` output into kvtier rows", runBench2CSV},
	}
}

// endSignals are the signals that end a command the way Ctrl-C does:
// SIGHUP is an ssh session that went away.
var endSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// run runs a command. The first SIGINT, SIGTERM or SIGHUP cancels its
// context: the command stops, removes its scratch files, keeps what it
// measured and exits 130. A second one kills the process at once (the
// signal's default action restored), for a command stuck where no context
// reaches: a hung driver call, a FIFO opened as a trace with no writer.
// A broken pipe on stdout or stderr (kvtier ... | head) cancels the
// context too: SIGPIPE is caught, so such a write fails with EPIPE
// instead of killing kvtier before it has cleaned up.
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
	return dispatch(ctx, brokenPipe{stdout, cancel}, brokenPipe{stderr, cancel}, args)
}

// A brokenPipe is a writer whose EPIPE (its reader went away) cancels the
// command. SIGPIPE itself cannot say which pipe broke: a socket's raises
// it too.
type brokenPipe struct {
	w      io.Writer
	cancel context.CancelFunc
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
	n, err := b.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		b.cancel()
	}
	return n, err
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
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "kvtier", version())
		return exitOK
	}
	var names []string
	for _, c := range commands() {
		if c.name == name {
			noteScriptEnv(stderr, name, args[1:], os.LookupEnv)
			return c.run(ctx, stdout, stderr, args[1:])
		}
		names = append(names, c.name)
	}
	fmt.Fprintf(stderr, "kvtier: unknown command %q%s (run kvtier help)\n", name, didYouMean(name, append(names, "help", "version")))
	return exitUsage
}

// scriptEnv are the environment variables scripts/bench.sh and go test
// ./bench read that the kvtier binary does not, by command, each with the
// flag that says the same to the binary.
var scriptEnv = map[string][][2]string{
	"sweep":     {{"KVTIER_PEER", "--peer"}, {"KVTIER_DISK_DIR", "--disk-dir"}, {"KVTIER_DISK_MAX", "--disk-max"}, {"KVTIER_BACKEND", "--backend"}},
	"transfer":  {{"KVTIER_PEER", "--peer"}, {"KVTIER_PEERS", "--peer"}},
	"probe":     {{"KVTIER_PRODUCER", "--producer"}},
	"interfere": {{"KVTIER_PRODUCER", "--producer"}},
}

// noteScriptEnv says, for each variable of scriptEnv set for the command
// whose flag args do not give, that the binary does not read it, so that
// it is not silently ignored.
func noteScriptEnv(stderr io.Writer, cmd string, args []string, lookup func(string) (string, bool)) {
	for _, e := range scriptEnv[cmd] {
		given := slices.ContainsFunc(args, func(a string) bool { return a == e[1] || strings.HasPrefix(a, e[1]+"=") })
		if v, ok := lookup(e[0]); ok && v != "" && !given {
			fmt.Fprintf(stderr, "kvtier %s: %s is read by scripts/bench.sh and go test ./bench, not by kvtier: give %s\n", cmd, e[0], e[1])
		}
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "kvtier measures the cost of bringing a reused KV-cache prefix back to the GPU.")
	fmt.Fprintln(w, "\nUsage: kvtier <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "version", "kvtier's module version and revision (also --version)")
	fmt.Fprintln(w, "\nRun kvtier <command> -h for a command's flags.")
}
