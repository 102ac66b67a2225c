package trace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/workload"
)

// Command is kvtier trace.
var Command = cli.Register(&cli.Command{Name: "trace", Order: 100, Run: runCommand,
	Summary: "a trace's reuse, APC ceiling, exact LRU hit ratio vs capacity, working set",
	Usage: `Usage: kvtier trace [flags] --trace TRACE... (or TRACE...)
       kvtier trace --generate FILE [generator flags]

Reads Mooncake or Alibaba-style traces (JSON lines, gzip or not; - is stdin) and writes trace.csv
(request and session counts, lengths, KV footprint, APC ceiling, reuse split, knees),
trace_curve.csv (the exact LRU prefix hit ratio at every capacity), trace_windows.csv
(working set per sliding window), plots and manifest.json; prints the path of trace.csv
and the summary.`})

// traceFlags are the flags kvtier trace and kvtier plan share: how a
// trace is read and what its analysis keeps.
type traceFlags struct {
	traces  []string // --trace, before the TRACE arguments
	model   cli.ModelFlags
	out     cli.OutputFlags
	read    workload.Options
	windows string
	touch   string
	shared  int
	knees   string
}

func (f *traceFlags) add(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.traces, "trace", nil, "trace to read (Mooncake or Alibaba JSON lines, gzip or not; - for stdin), as in replay and knee; the same as a TRACE argument")
	f.model.AddModel(fs)
	f.out.Add(fs)
	fs.IntVar(&f.read.BlockTokens, "trace-block", 0, "tokens per hash id (0: the format's: 512 Mooncake, 16 Alibaba)")
	fs.IntVar(&f.read.Reorder, "reorder", workload.DefaultReorder, "requests held to put lines into timestamp order; a line out of order by more is an error")
	fs.StringVar(&f.windows, "window", "60s,600s", "sliding windows of the working set")
	fs.StringVar(&f.touch, "touch", string(workload.TouchForward), "order a request's blocks become most recent: forward (block 0 first) or reverse (tail first, as vLLM frees them)")
	fs.StringVar(&f.knees, "knees", "50,90,95,99", "shares of the APC ceiling (per cent) whose smallest LRU capacity is reported")
	fs.IntVar(&f.shared, "shared-sessions", workload.DefaultSharedSessions, "sessions that must reference a hash id for its cross-session hits to count as shared prefix")
}

// paths are the traces to read: every --trace, then the TRACE
// arguments.
func (f *traceFlags) paths(fs *pflag.FlagSet) []string {
	return append(slices.Clone(f.traces), fs.Args()...)
}

// options returns the reading and analysis options, the trace "-" read
// from stdin, adding every problem to errs.
func (f *traceFlags) options(stdin io.Reader, errs *[]error) (workload.Options, workload.AnalyzeOptions, kv.Geometry) {
	f.read.Stdin = stdin
	g, err := f.model.Geometry()
	if err != nil {
		*errs = append(*errs, err)
	}
	ao := workload.AnalyzeOptions{BytesPerToken: g.BytesPerToken(), Touch: workload.Touch(f.touch), SharedSessions: f.shared}
	if ao.BytesPerToken <= 0 {
		ao.BytesPerToken = 1 // the geometry's error is said above
	}
	for _, d := range cli.ListFlag(errs, "window", f.windows, cli.ParseDuration) {
		ao.Windows = append(ao.Windows, d.Seconds())
	}
	for _, k := range cli.ListFlag(errs, "knees", f.knees, parsePercent) {
		ao.Knees = append(ao.Knees, k/100)
	}
	if err := f.read.Validate(); err != nil {
		*errs = append(*errs, err)
	}
	if err := f.out.Check(); err != nil {
		*errs = append(*errs, err)
	}
	return f.read, ao, g
}

// parsePercent reads a share in per cent ("90", "99.9", "95%").
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a percentage (want e.g. 90 or 99.9)", s)
	}
	return v, nil
}

// settings are the resolved options for manifest.json.
func (f *traceFlags) settings(ao workload.AnalyzeOptions, g kv.Geometry) map[string]string {
	return map[string]string{
		"model": g.Model, "bytes_per_token": strconv.FormatInt(g.BytesPerToken(), 10),
		"trace_block": strconv.Itoa(f.read.BlockTokens), "reorder": strconv.Itoa(f.read.Reorder),
		"window": f.windows, "knees": f.knees, "touch": string(ao.Touch), "shared_sessions": strconv.Itoa(f.shared),
		"instances": fmt.Sprint(ao.Instances), "route": string(ao.Route),
		"sample": strconv.FormatFloat(ao.Sample, 'g', -1, 64),
	}
}

// analyzeTraces analyses each trace, saying on stderr how long it took.
// A trace that cannot be read or has no usable request is bad input.
func analyzeTraces(ctx context.Context, c *cli.Call, quiet bool, paths []string, g kv.Geometry, ro workload.Options, ao workload.AnalyzeOptions) ([]*Result, error) {
	var out []*Result
	pr := harness.ProgressOf(c.Stderr)
	pr.Start(c.Name, quiet)
	defer pr.Stop()
	pr.PlanEstimated(len(paths), traceSizes(paths))
	for _, p := range paths {
		res, err := analyzeOne(ctx, c, pr, p, p, g, ro, ao)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// traceBytesPerSec is a rough rate of a trace's analysis, for the ETA.
const traceBytesPerSec = 50e6

// traceSizes are the estimated seconds of the trace files at paths, by
// their sizes, which the progress's ETA weighs them by (an analysis
// reads every line); nil where one has no size to read (standard input,
// a pipe): they are then counted alike.
func traceSizes(paths []string) []float64 {
	var out []float64
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
			return nil
		}
		out = append(out, float64(fi.Size())/traceBytesPerSec)
	}
	return out
}

// analyzeOne analyses the trace at path as the configuration label of
// the progress pr, saying how long it took and what was wrong with its
// lines.
func analyzeOne(ctx context.Context, c *cli.Call, pr *harness.Progress, label, path string, g kv.Geometry, ro workload.Options, ao workload.AnalyzeOptions) (*Result, error) {
	sw := harness.StartStopwatch()
	pr.Begin(label)
	res, err := AnalyzeFile(ctx, path, g.Model, ro, ao)
	if err != nil {
		return nil, err
	}
	a := res.Analysis
	sec := sw.Seconds()
	pr.End(fmt.Sprintf("%s trace, %d requests, %d block references (%d distinct) in %s (%s references/s), %s analysis",
		res.Read.Format, a.Requests, a.BlockRefs, a.Distinct, units.FormatSeconds(sec), units.FormatSig(float64(a.BlockRefs)/sec), a.Method))
	if res.Read.Malformed > 0 {
		c.Logf("%s: warning: %s", path, res.Read.BadLines())
	}
	if res.Read.DanglingParents > 0 {
		c.Logf("%s: warning: %s a parent_chat_id never seen: each starts a session", path, units.Count(res.Read.DanglingParents, "request names", "requests name"))
	}
	return res, nil
}

// traceFailed says why the analysis of a trace stopped and returns the
// exit status: interrupted, or a trace that cannot be read or used.
func traceFailed(ctx context.Context, c *cli.Call, err error) int {
	if ctx.Err() != nil {
		c.Logf("interrupted; nothing written")
		return cli.ExitInterrupted
	}
	return c.UsageErr(err)
}

// writeRows opens file f of the output and writes rows into it.
func writeRows(out *harness.Output, f results.File, rows []results.Row) error {
	sink, err := out.Open(f)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := sink.Write(r); err != nil {
			return err
		}
	}
	return nil
}

// writeTraceFiles writes the trace suite's files for every result.
func writeTraceFiles(out *harness.Output, res []*Result) error {
	for i, rows := range []func(*Result) []results.Row{
		(*Result).Rows, (*Result).CurveRows, (*Result).WindowRows,
	} {
		var all []results.Row
		for _, r := range res {
			all = append(all, rows(r)...)
		}
		if err := writeRows(out, Suite.Files[i], all); err != nil {
			return err
		}
	}
	return nil
}

// traceOnlyFlags are the flags of kvtier trace that plan does not take.
type traceOnlyFlags struct {
	instances, route string
	sample           float64
	seed             uint64
	generate         string
	gen              workload.GenFlags
}

// runCommand analyses traces, or writes a synthetic one with --generate.
func runCommand(ctx context.Context, c *cli.Call) int {
	fs := c.FlagSet()
	var f traceFlags
	var t traceOnlyFlags
	f.add(fs)
	fs.StringVar(&t.instances, "instances", "1", "instance counts behind a router, one curve each (per-instance capacity)")
	fs.StringVar(&t.route, "route", string(workload.RouteRandom), "router of --instances: random, session or hash (of the first block)")
	fs.Float64Var(&t.sample, "sample", 1, "SHARDS sampling rate of blocks in (0, 1] (1: exact, every block tracked)")
	fs.Uint64Var(&t.seed, "seed", 1, "seed of random routing, of the --sample draw and of --generate")
	fs.StringVar(&t.generate, "generate", "", "write a synthetic Mooncake-format trace to this file instead of analysing (see the generator flags)")
	t.gen.Add(fs, workload.DefaultGenOptions(), "--generate: ")
	if code, ok := c.ParseFlags(fs); !ok {
		return code
	}
	if t.generate != "" {
		return runGenerate(c, fs, f.paths(fs), t)
	}
	var errs []error
	ro, ao, g := f.options(c.Stdin, &errs)
	ao.Instances = cli.ListFlag(&errs, "instances", t.instances, cli.Atoi, 1)
	ao.Route, ao.Sample, ao.Seed = workload.Route(t.route), t.sample, t.seed
	if !(t.sample > 0) {
		// The analysis reads 0 as exact; on the command line it is a mistake.
		errs = append(errs, option.Errorf("sample", "%g: must be in (0, 1] (1: exact)", t.sample))
	}
	if err := ao.Validate(); err != nil {
		errs = append(errs, err)
	}
	paths := f.paths(fs)
	if len(paths) == 0 {
		errs = append(errs, errors.New("need at least one trace file (kvtier trace --trace TRACE, or TRACE...), or --generate FILE"))
	}
	if err := errors.Join(errs...); err != nil {
		return c.UsageErr(err)
	}
	res, err := analyzeTraces(ctx, c, f.out.Quiet, paths, g, ro, ao)
	if err != nil {
		return traceFailed(ctx, c, err)
	}
	var dir string
	code := cli.SuiteRun{Call: c, Suite: Suite, Out: f.out, Plots: true,
		Run: func(ctx context.Context, out *harness.Output) error {
			dir = out.Dir
			out.Manifest.Settings = f.settings(ao, g)
			return writeTraceFiles(out, res)
		}}.Exec(ctx)
	return c.PrintSection(dir, code, writeTrace)
}

// runGenerate writes a synthetic trace: the generator's flags and
// --trace-block and --seed apply.
func runGenerate(c *cli.Call, fs *pflag.FlagSet, traces []string, t traceOnlyFlags) int {
	if len(traces) > 0 {
		return c.UsageErr(option.Errorf("generate", "writes a trace and takes no TRACE argument or --trace (got %q)", traces[0]))
	}
	var errs []error
	b, _ := fs.GetInt("trace-block")
	o := t.gen.Options(&errs, t.seed, b)
	if err := errors.Join(errs...); err != nil {
		return c.UsageErr(err)
	}
	if err := cli.CheckFileDir(t.generate); err != nil {
		return c.UsageErr(option.Wrap("generate", err))
	}
	var st workload.GenStats
	err := results.WriteFile(t.generate, func(w io.Writer) (err error) {
		st, err = workload.Generate(w, o)
		return err
	})
	if err != nil {
		c.Logf("--generate %s: %v", t.generate, err)
		return cli.ExitFail
	}
	c.Logf("generated %d requests in %d sessions, %d block references of %d tokens (seed %d)",
		st.Requests, st.Sessions, st.BlockRefs, o.BlockTokens, o.Seed)
	fmt.Fprintln(c.Stdout, t.generate)
	return cli.ExitOK
}
