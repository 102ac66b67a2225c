package main

import (
	"context"
	"io"

	"github.com/kvtier/kvtier/cli"
)

// producerEnv is KVTIER_PRODUCER, which scripts/bench.sh reads for probe
// and interfere.
var producerEnv = []cli.EnvFlag{{Env: "KVTIER_PRODUCER", Flag: "--producer"}}

// The commands still written in this package, each with its place in
// kvtier help; the suites' own register from their packages.
func init() {
	for _, c := range []struct {
		name, summary string
		order         int
		run           func(ctx context.Context, stdout, stderr io.Writer, args []string) int
		scriptEnv     []cli.EnvFlag
	}{
		{"sim", "a simulated vLLM server (OpenAI API, prefix cache, offload, P/D)", 70, runSim, nil},
		{"probe", "four-tier TTFT of a reused prefix against a vLLM server", 80, runProbe, producerEnv},
		{"interfere", "MB1: decode stall caused by a prefill on the same server", 90, runInterfere, producerEnv},
		{"trace", "a trace's reuse, APC ceiling, exact LRU hit ratio vs capacity, working set", 100, runTrace, nil},
		{"plan", "tier capacities for a trace: hit share per tier and predicted TTFT", 110, runPlan, nil},
		{"replay", "send a trace (or multi-turn sessions) to a server: realized vs predicted APC, TTFT", 120, runReplay, nil},
		{"knee", "sweep a server's GPU KV capacity with one workload: the capacity knee", 130, runKnee, nil},
	} {
		run := c.run
		cli.Register(&cli.Command{Name: c.name, Summary: c.summary, Order: c.order, ScriptEnv: c.scriptEnv,
			Run: func(ctx context.Context, call *cli.Call) int { return run(ctx, call.Stdout, call.Stderr, call.Args) }})
	}
}
