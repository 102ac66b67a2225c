package trace

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/serving/servingflag"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/workload"
)

// PlanCommand is kvtier plan.
var PlanCommand = cli.Register(&cli.Command{Name: "plan", Order: 110, Run: runPlan,
	Summary: "tier capacities for a trace: hit share per tier and predicted TTFT",
	Usage: `Usage: kvtier plan --trace TRACE --sim | --base-url URL | --costs RESULTS_DIR [--hbm LIST] [--dram LIST] [--disk LIST] [--remote LIST] [flags]

Answers the capacity question for a trace: for the first tier alone, and for the second beside
each --hbm capacity, the capacity reaching each --knees share of the achievable prefix hit ratio
(the trace's exact LRU model), and the TTFT it buys with and without that tier. The costs come
from --sim (measured by kvtier against its embedded simulator on its virtual clock), --base-url
(measured against that server in real time, as kvtier probe: both take miss, GPU hit and CPU hit
at the trace's input p10, p50, p90, p99 and max, capped by the context), or RESULTS_DIR (a sweep:
fitted α + bytes/rate per tier; or a probe: TTFT per tier vs L). The plan then checks itself: it
replays the trace's first requests (up to 8 Mi input tokens) one at a time, through the simulator
at the 90 % configuration and without its second tier, or against the server at the capacities it
runs with, and prints predicted beside realized hit and TTFT. Writes plan.csv (the --hbm × --dram
grid and the answer's configurations), plan_costs.csv, plan_check.csv, the trace's own files,
plots and manifest.json; prints the path of plan.csv and the plan. Tiers with no measured cost
are named as missing.`})

// planFlags are the flags of kvtier plan besides the trace's.
type planFlags struct {
	costs string
	// caps are the capacity lists of the plan's tiers, by plan name (one
	// flag each: --hbm, --dram, ...).
	caps      map[string]*string
	inclusive bool
	sim       bool // --sim: the costs of an embedded kvtier sim
	baseURL   string
	fs        *pflag.FlagSet
}

// addCaps declares one capacity flag per plan tier that holds blocks.
func (p *planFlags) addCaps(fs *pflag.FlagSet) {
	p.caps = map[string]*string{}
	for _, d := range tierspec.Capacities() {
		p.caps[d.Plan.Name] = fs.String(d.Plan.Name, d.Plan.Capacities, d.Plan.Usage)
	}
}

// typedRounding returns the rounding lines (Planner.Rounding) of the
// capacity flags the user typed: the defaults' rounding is left to the
// manifest's capacity_rounding rather than said for sizes nobody gave.
func (p *planFlags) typedRounding(lines []string) []string {
	var out []string
	for _, l := range lines {
		flag, _, _ := strings.Cut(strings.TrimPrefix(l, "--"), " ")
		if cli.FlagChanged(p.fs, flag) {
			out = append(out, l)
		}
	}
	return out
}

// configs returns every combination of the tiers' capacities, the
// first tier's varying slowest.
func (f *planFlags) configs(errs *[]error) []Config {
	out := []Config{{}}
	var flags []string
	for _, t := range tierspec.CapacityNames() {
		var next []Config
		for _, c := range out {
			for _, b := range cli.ListFlag(errs, t, *f.caps[t], workload.ParseCapacity) {
				n := maps.Clone(c)
				n[t] = b
				next = append(next, n)
			}
		}
		out = next
		flags = append(flags, "--"+t)
	}
	if len(out) > 256 {
		*errs = append(*errs, option.Errorf(tierspec.CapacityNames()[0], "%s give %d configurations; at most 256", strings.Join(flags, " × "), len(out)))
	}
	return out
}

// settings records the capacity flags for the manifest.
func (f *planFlags) settings() map[string]string {
	m := map[string]string{}
	for t, v := range f.caps {
		m[t] = *v
	}
	return m
}

// loadCosts reads the tier costs of the results directory and checks
// they were measured for the model the plan sizes capacities with: the
// costs' model when --model and --model-config are not given.
func loadCosts(dir string, m *cli.ModelFlags) (*analysis.PlanCosts, error) {
	run, err := analysis.Load(dir)
	if err != nil {
		return nil, option.Wrap("costs", err)
	}
	c, err := analysis.LoadPlanCosts(run.Dir, run.Rows("sweep"), run.Rows("probe"))
	if err != nil {
		return nil, option.Wrap("costs", err)
	}
	switch {
	case c.Model == "" || m.Config != "":
	case m.Model == "":
		if _, err := kv.LookupModel(c.Model); err == nil {
			m.Model = c.Model
		} else {
			return nil, option.Errorf("model-config", "the costs in %s were measured for %s, not a preset: give its config.json", dir, c.Model)
		}
	case m.Model != c.Model:
		return nil, option.Errorf("model", "%s: the costs in %s were measured for %s", m.Model, dir, c.Model)
	}
	return c, nil
}

// server returns the server of --base-url: given, or from the
// environment when neither --sim nor --costs is; nil for none.
func (p *planFlags) server() *planServer {
	if cli.FlagChanged(p.fs, "base-url") || (p.baseURL != "" && !p.sim && p.costs == "") {
		return &planServer{url: strings.TrimSpace(p.baseURL)}
	}
	return nil
}

// costsOf returns the costs of --costs, adding every problem to errs;
// nil for --sim and --base-url, whose costs are measured once the
// trace's lengths are known. Exactly one of the three is given.
func (p *planFlags) costsOf(m *cli.ModelFlags, errs *[]error) *analysis.PlanCosts {
	var given []string
	for _, g := range []struct {
		flag string
		ok   bool
	}{{"--sim", p.sim}, {"--base-url", p.server() != nil}, {"--costs", p.costs != ""}} {
		if g.ok {
			given = append(given, g.flag)
		}
	}
	switch {
	case len(given) > 1:
		*errs = append(*errs, fmt.Errorf("%s exclude each other: the costs come from one of --sim, --base-url and --costs", strings.Join(given, " and ")))
	case p.server() != nil:
		if err := serving.CheckURL(p.server().url); err != nil {
			*errs = append(*errs, option.Wrap("base-url", err))
		}
	case p.sim:
	case p.costs == "":
		*errs = append(*errs, option.Errorf("costs", "a results directory is required (or --sim, or --base-url URL)"))
	default:
		c, err := loadCosts(p.costs, m)
		*errs = append(*errs, err)
		return c
	}
	return nil
}

// runPlan predicts, per tier capacity configuration, what share of a
// trace's tokens each tier serves and what TTFT that gives.
func runPlan(ctx context.Context, c *cli.Call) int {
	fs := c.FlagSet()
	var f traceFlags
	var p planFlags
	f.add(fs)
	fs.StringVar(&p.costs, "costs", "", "results directory of a kvtier sweep (device tier costs) or probe (HTTP TTFT per tier)")
	p.addCaps(fs)
	fs.BoolVar(&p.sim, "sim", false, "measure the costs against an embedded kvtier sim on its virtual clock (calibrated to the H20 reference; miss, GPU hit, CPU hit at the trace's input p10, p50, p90, p99, max) instead of --costs, and check the plan against it")
	servingflag.AddBaseURL(fs, c, &p.baseURL, "base URL of a vLLM server to measure the costs against (miss, GPU hit, CPU hit at the trace's lengths, as kvtier probe, in real time) instead of --costs, and to check the plan against at the capacity it runs with (env "+servingflag.EnvEndpoint+")")
	p.fs = fs
	fs.BoolVar(&p.inclusive, "inclusive", false, "tiers are inclusive (write-through offload): each holds the most recent blocks that fit it; default exclusive")
	if code, ok := c.ParseFlags(fs); !ok {
		return code
	}
	var errs []error
	paths := f.paths(fs)
	if len(paths) != 1 {
		errs = append(errs, fmt.Errorf("need exactly one trace file (kvtier plan --trace TRACE --costs DIR), got %d", len(paths)))
	}
	costs := p.costsOf(&f.model, &errs)
	ro, ao, g := f.options(c.Stdin, &errs)
	errs = append(errs, ao.Validate())
	configs := p.configs(&errs)
	if err := errors.Join(errs...); err != nil {
		return c.UsageErr(err)
	}
	return plan(ctx, c, planRun{f: &f, p: &p, costs: costs, configs: configs, geom: g, ro: ro, ao: ao, trace: paths[0], server: p.server(), cpus: runtime.GOMAXPROCS(0)})
}

// planRun is a validated kvtier plan.
type planRun struct {
	f       *traceFlags
	p       *planFlags
	costs   *analysis.PlanCosts
	configs []Config
	geom    kv.Geometry
	ro      workload.Options
	ao      workload.AnalyzeOptions
	trace   string
	server  *planServer // --base-url; nil for none
	cpus    int         // how many Planners plan at once
}

// planned is what a plan computed, for its files.
type planned struct {
	res      *Result
	plan     []PlanResult
	rounding []string
	checks   []results.Row
}

// plan runs the phases of kvtier plan under one progress line (reading
// the trace, measuring costs, planning, checking), then writes its
// files and prints its section.
func plan(ctx context.Context, c *cli.Call, pr planRun) int {
	prog := harness.ProgressOf(c.Stderr)
	prog.Start(c.Name, pr.f.out.Quiet)
	prog.Plan(3 + map[bool]int{true: 1}[pr.costs == nil])
	pd, err := pr.evaluate(ctx, c, prog)
	prog.Stop()
	if err != nil {
		return traceFailed(ctx, c, err)
	}
	for _, n := range pr.p.typedRounding(pd.rounding) {
		c.Logf("%s", n)
	}
	var dir string
	code := cli.SuiteRun{Call: c, Suite: PlanSuite, Out: pr.f.out, Plots: true,
		Run: func(ctx context.Context, out *harness.Output) error {
			dir = out.Dir
			out.Manifest.Settings = pr.f.settings(pr.ao, pr.geom)
			maps.Copy(out.Manifest.Settings, pr.p.settings())
			maps.Copy(out.Manifest.Settings, map[string]string{"costs": pr.p.costs,
				"inclusive": strconv.FormatBool(pr.p.inclusive), "cost_source": pr.costs.Source(),
				"sim": strconv.FormatBool(pr.p.sim), "base_url": redact.URL(pr.p.baseURL)})
			if len(pd.rounding) > 0 {
				out.Manifest.Settings["capacity_rounding"] = strings.Join(pd.rounding, "; ")
			}
			if err := writeTraceFiles(out, []*Result{pd.res}); err != nil {
				return err
			}
			if err := writePlanFiles(out, pd.res, pd.plan, pr.costs); err != nil {
				return err
			}
			return writeRows(out, PlanSuite.Files[2], pd.checks)
		}}.Exec(ctx)
	return c.PrintSection(dir, code, writePlan)
}

// evaluate reads the trace once, for its lengths, knees and every
// request's stack distances, measures the costs (--sim), plans the grid
// and the answer's configurations from the distances kept, and checks
// the recommendation.
func (pr *planRun) evaluate(ctx context.Context, c *cli.Call, prog *harness.Progress) (*planned, error) {
	var log hitLog
	blockTokens := 0
	sample := &checkSample{limit: CheckTokens}
	pr.ao.OnRequest = func(r *workload.Request, h *workload.Hits) {
		if blockTokens == 0 {
			blockTokens = r.BlockTokens
		}
		log.add(r, h)
		sample.take(r)
	}
	res, err := analyzeOne(ctx, c, prog, "reading "+pr.trace, pr.trace, pr.geom, pr.ro, pr.ao)
	if err != nil {
		return nil, err
	}
	if err := pr.measureCosts(ctx, c, prog, res); err != nil {
		return nil, err
	}
	cs, roles := pr.answerConfigs(res)
	checkCs, checkRoles := pr.checkConfigs(cs, roles)
	configs, allRoles := append(slices.Clone(pr.configs), cs...), append(make([]Role, len(pr.configs)), roles...)
	bb := int64(blockTokens) * pr.geom.BytesPerToken()
	prog.Begin("planning " + strconv.Itoa(len(configs)) + " configurations")
	plan, rounding, err := planLog(PlanOptions{Configs: configs, Roles: allRoles, Inclusive: pr.p.inclusive, Costs: pr.costs, BlockBytes: bb}, &log, pr.cpus)
	if err != nil {
		return nil, err
	}
	var check *Planner
	if len(checkCs) > 0 {
		// The simulator's CPU store is written through, as vLLM's
		// offload: the check predicts inclusive tiers.
		check, err = NewPlanner(PlanOptions{Configs: checkCs, Roles: checkRoles, Inclusive: pr.p.inclusive || pr.p.costs == "", Costs: pr.costs, BlockBytes: bb})
		if err != nil {
			return nil, err
		}
		log.replayFirst(len(sample.reqs), check.Observe)
	}
	prog.End(strconv.Itoa(log.ends.n) + " requests planned")
	// The distances (6 bytes a block reference) are done with: the
	// check's replays through kvtier sim need the memory.
	log = hitLog{}
	pd := &planned{res: res, plan: plan, rounding: rounding}
	pd.checks = pr.check(ctx, prog, res, sample, check)
	return pd, nil
}

// checkShare is the knee a plan checks: 90 % of the APC ceiling.
const checkShare = 0.9

// pick returns xs at the indices is.
func pick[T any](xs []T, is []int) []T {
	out := make([]T, len(is))
	for i, j := range is {
		out[i] = xs[j]
	}
	return out
}

// answerConfigs are the configurations of the answer to the capacity
// question: the trace's one-cache knees, and the second tier's at each
// capacity of the first in the grid.
func (pr *planRun) answerConfigs(res *Result) ([]Config, []Role) {
	knees := map[float64]int64{}
	for _, cv := range res.Analysis.Curves {
		if cv.Instances != 1 {
			continue
		}
		for _, f := range res.Analysis.Knees {
			if b, ok := cv.Knee(f); ok {
				knees[f] = b
			}
		}
	}
	var firsts []int64
	for _, cfg := range pr.configs {
		firsts = append(firsts, cfg[CapacityTiers[0]])
	}
	return AnswerConfigs(knees, res.Analysis.BlockBytes, firsts, pr.p.inclusive)
}

// noReplayTarget is why a plan on --costs checks nothing: its console
// line and its skipped check rows say the same.
const noReplayTarget = "no server or simulator to replay against: the costs come from a results directory (--costs); give --sim or --base-url to check"

// check replays the sample at the configurations the check planner
// predicted, one progress phase; a plan whose costs come from a results
// directory has no server to replay against: its rows are skipped.
func (pr *planRun) check(ctx context.Context, prog *harness.Progress, res *Result, s *checkSample, check *Planner) []results.Row {
	if check == nil {
		if pr.server != nil && pr.server.why != "" {
			r := results.NewRow(PlanSuite.Name)
			r.Backend, r.Model, r.Status, r.Reason = Backend, res.Model, results.StatusSkipped, pr.server.why
			r.Set(results.ColTrace, res.Name())
			r.Set(ColRole, RoleServer)
			return []results.Row{r}
		}
		return nil
	}
	pred := check.Results()
	got := make([]checkResult, len(pred))
	what := fmt.Sprintf("checking %d configurations on %s", len(pred), s.describe())
	if !pr.p.sim && pr.server == nil {
		what = fmt.Sprintf("not checking %d configurations: %s", len(pred), noReplayTarget)
	}
	prog.Begin(what)
	for i, p := range pred {
		prog.Step("configuration", i, len(pred))
		switch {
		case pr.p.sim:
			got[i] = simCheck(pr.simConfig(), p.Config, pr.geom.BytesPerToken(), s)
		case pr.server != nil:
			got[i] = pr.server.check(ctx, s)
		default:
			got[i].Err = errors.New(noReplayTarget)
		}
	}
	prog.End("")
	return CheckRows(res, s, pred, got, pr.against())
}

// against says what the check replays against, and how.
func (pr *planRun) against() string {
	switch {
	case pr.p.sim:
		return simAgainst
	case pr.server != nil:
		return "the server at " + redact.URL(pr.server.url) + " with the capacities it runs with (a CPU store written through, so predicted as inclusive tiers), requests sent one at a time in trace order, one output token each"
	}
	return ""
}

// checkConfigs are the configurations the self-check replays: against
// kvtier sim, the 90 % knee's and the same without its tier (checkPicks);
// against a server, the capacities it runs with, once measure learnt
// them.
func (pr *planRun) checkConfigs(cs []Config, roles []Role) ([]Config, []Role) {
	if pr.server != nil {
		if pr.server.config == nil {
			return nil, nil
		}
		return []Config{pr.server.config}, []Role{{Kind: RoleServer}}
	}
	is := checkPicks(cs, roles, checkShare)
	return pick(cs, is), pick(roles, is)
}

// measureCosts measures the costs against kvtier sim or the server, one
// progress phase; with --costs they are read already.
func (pr *planRun) measureCosts(ctx context.Context, c *cli.Call, prog *harness.Progress, res *Result) error {
	var err error
	switch {
	case pr.p.sim:
		pr.costs, err = pr.simCosts(c, prog, res)
	case pr.server != nil:
		prog.Begin("measuring costs against " + redact.URL(pr.server.url) + " (real time)")
		var ls []int64
		pr.costs, ls, err = pr.server.measure(ctx, res.Analysis.Input, pr.geom.BytesPerToken())
		if err == nil {
			prog.End(fmt.Sprintf("miss, GPU hit, CPU hit at %d lengths", len(ls)))
			c.Logf("costs: measured against %s in real time (%s): miss, GPU hit and CPU hit at L = %s, the trace's input p10, p50, p90, p99 and max (capped by the server's context)", redact.URL(pr.server.url), pr.costs.Source(), tokenList(ls))
		}
	}
	return err
}

// simConfig is the simulator plan --sim measures and checks against.
func (pr *planRun) simConfig() vllmsim.Config {
	return vllmsim.Config{Model: pr.geom.Model, Geometry: pr.geom, TimeScale: 1}
}

// simCosts measures the costs against kvtier sim at lengths covering
// the trace's input lengths, one progress phase.
func (pr *planRun) simCosts(c *cli.Call, prog *harness.Progress, res *Result) (*analysis.PlanCosts, error) {
	ls := SimLengths(res.Analysis.Input, vllmsim.DefaultMaxModelLen-1024)
	prog.Begin("measuring costs against kvtier sim (virtual clock)")
	costs, err := SimCosts(pr.simConfig(), ls, func(i, n int) { prog.Step("length", i, n) })
	if err != nil {
		return nil, err
	}
	prog.End(fmt.Sprintf("miss, GPU hit, CPU hit at %d lengths", len(ls)))
	c.Logf("costs: measured against kvtier sim on its virtual clock (simulated, calibrated to the H20 reference): miss, GPU hit and CPU hit at L = %s, the trace's input p10, p50, p90, p99 and max (capped by the context)", tokenList(ls))
	return costs, nil
}

// tokenList renders prefix lengths as "4k, 16k, 27,300".
func tokenList(ls []int64) string {
	var out []string
	for _, l := range ls {
		out = append(out, units.FormatTokens(l))
	}
	return strings.Join(out, ", ")
}

// writePlanFiles writes plan.csv and plan_costs.csv.
func writePlanFiles(out *harness.Output, res *Result, plan []PlanResult, costs *analysis.PlanCosts) error {
	if err := writeRows(out, PlanSuite.Files[0], PlanRows(res, plan, costs.Dir)); err != nil {
		return err
	}
	return writeRows(out, PlanSuite.Files[1], costRows(costs))
}

// costRows are the plan_costs.csv rows: one per plan tier.
func costRows(c *analysis.PlanCosts) []results.Row {
	var rows []results.Row
	for _, t := range c.Tiers {
		r := RawRow()
		r.Tier = t.Tier
		r.Set("costs", c.Dir)
		r.Set("measured", t.Measured)
		if alpha, rate, ok := c.Store(t.Tier); ok {
			r.Set("store_alpha_s", alpha)
			r.Set("store_rate", rate)
		}
		if !t.Measured {
			r.Reason = t.Reason
			if len(t.Points) > 0 {
				r.Set("source", t.Source)
				r.Set("n", len(t.Points))
				r.Set("min_tokens", int64(t.Points[0][0]))
				r.Set("max_tokens", int64(t.Points[len(t.Points)-1][0]))
			}
			rows = append(rows, r)
			continue
		}
		r.Set("source", t.Source)
		r.Set("config", t.Config)
		r.Set("formula", t.Model)
		if f := t.Fit; f != nil {
			r.Set("alpha_s", f.Alpha)
			r.Set("rate", f.Rate)
			r.Set("rate_unit", map[string]string{"bytes": "B/s", "flops": "FLOP/s"}[f.Regressor])
			r.Set("r2", f.R2)
			r.Set("n", f.N)
			r.Set("min_tokens", f.MinL)
			r.Set("max_tokens", f.MaxL)
		} else if g := t.Growth; g != nil {
			r.Set("alpha_s", g.C)
			r.Set(results.ColLinear, g.A)
			r.Set(results.ColQuadratic, g.B)
			r.Set("rate", math.NaN())
			r.Set("r2", g.R2)
			r.Set("n", len(t.Points))
			r.Set("min_tokens", g.MinL)
			r.Set("max_tokens", g.MaxL)
		}
		r.Set("fit_problem", strings.Join(t.Problems(), "; "))
		rows = append(rows, r)
	}
	return rows
}
