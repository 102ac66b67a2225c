package trace

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/workload"
)

// PlanCommand is kvtier plan.
var PlanCommand = cli.Register(&cli.Command{Name: "plan", Order: 110, Run: runPlan,
	Summary: "tier capacities for a trace: hit share per tier and predicted TTFT",
	Usage: `Usage: kvtier plan --trace TRACE --costs RESULTS_DIR [--hbm LIST] [--dram LIST] [--disk LIST] [--remote LIST] [flags]

Combines the trace's exact LRU stack distances with the tier costs measured in RESULTS_DIR
(a sweep: fitted α + bytes/rate per tier; or a probe: TTFT per tier vs L) and writes, per
capacity configuration, the share of tokens each tier serves and the predicted KV-load time
and TTFT (plan.csv, plan_costs.csv), the trace's own files, plots and manifest.json; prints
the path of plan.csv and the plan. Tiers with no measured cost are named as missing.`})

// planFlags are the flags of kvtier plan besides the trace's.
type planFlags struct {
	costs string
	// caps are the capacity lists of the plan's tiers, by plan name (one
	// flag each: --hbm, --dram, ...).
	caps      map[string]*string
	inclusive bool
	sim       bool // --sim: the costs of an embedded kvtier sim
}

// addCaps declares one capacity flag per plan tier that holds blocks.
func (p *planFlags) addCaps(fs *pflag.FlagSet) {
	p.caps = map[string]*string{}
	for _, d := range tierspec.Capacities() {
		p.caps[d.Plan.Name] = fs.String(d.Plan.Name, d.Plan.Capacities, d.Plan.Usage)
	}
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

// costsOf returns the costs of --costs, adding every problem to errs;
// nil for --sim, whose costs are made once the trace's lengths are
// known.
func (p *planFlags) costsOf(paths []string, m *cli.ModelFlags, errs *[]error) *analysis.PlanCosts {
	switch {
	case p.sim && p.costs != "":
		*errs = append(*errs, option.Errorf("sim", "given with --costs: give one of them"))
	case p.sim && slices.Contains(paths, "-"):
		*errs = append(*errs, option.Errorf("sim", "reads the trace twice (its lengths, then the plan): give a file, not -"))
	case p.sim:
	case p.costs == "":
		*errs = append(*errs, option.Errorf("costs", "a results directory is required (or --sim)"))
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
	fs.BoolVar(&p.sim, "sim", false, "take the costs from an embedded kvtier sim (its cost model, calibrated to the H20 reference, evaluated at prefix lengths covering the trace's input lengths: p10, p50, p90, p99, max) instead of --costs")
	fs.BoolVar(&p.inclusive, "inclusive", false, "tiers are inclusive (write-through offload): each holds the most recent blocks that fit it; default exclusive")
	if code, ok := c.ParseFlags(fs); !ok {
		return code
	}
	var errs []error
	paths := f.paths(fs)
	if len(paths) != 1 {
		errs = append(errs, fmt.Errorf("need exactly one trace file (kvtier plan --trace TRACE --costs DIR), got %d", len(paths)))
	}
	costs := p.costsOf(paths, &f.model, &errs)
	ro, ao, g := f.options(c.Stdin, &errs)
	errs = append(errs, ao.Validate())
	configs := p.configs(&errs)
	if err := errors.Join(errs...); err != nil {
		return c.UsageErr(err)
	}
	return plan(ctx, c, planRun{f: &f, p: &p, costs: costs, configs: configs, geom: g, ro: ro, ao: ao, trace: paths[0]})
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
}

func plan(ctx context.Context, c *cli.Call, pr planRun) int {
	if pr.p.sim {
		costs, err := simPlanCosts(ctx, c, pr)
		if err != nil {
			return traceFailed(ctx, c, err)
		}
		pr.costs = costs
	}
	// The block bytes need the trace's block size, known from its first
	// line: the planner is made on the first request.
	var planner *Planner
	var perr error
	pr.ao.OnRequest = func(r *workload.Request, h *workload.Hits) {
		if planner == nil && perr == nil {
			planner, perr = NewPlanner(PlanOptions{
				Configs: pr.configs, Inclusive: pr.p.inclusive, Costs: pr.costs,
				BlockBytes: int64(r.BlockTokens) * pr.geom.BytesPerToken(),
			})
		}
		if planner != nil {
			planner.Observe(r, h)
		}
	}
	res, err := analyzeTraces(ctx, c, pr.f.out.Quiet, []string{pr.trace}, pr.geom, pr.ro, pr.ao)
	if err == nil {
		err = perr
	}
	if err != nil {
		return traceFailed(ctx, c, err)
	}
	for _, n := range planner.Rounding() {
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
				"sim": strconv.FormatBool(pr.p.sim)})
			if r := planner.Rounding(); len(r) > 0 {
				out.Manifest.Settings["capacity_rounding"] = strings.Join(r, "; ")
			}
			if err := writeTraceFiles(out, res); err != nil {
				return err
			}
			return writePlanFiles(out, res[0], planner.Results(), pr.costs)
		}}.Exec(ctx)
	return c.PrintSection(dir, code, writePlan)
}

// simPlanCosts reads the trace once for its input lengths and returns
// the costs of an embedded kvtier sim at lengths covering them.
func simPlanCosts(ctx context.Context, c *cli.Call, pr planRun) (*analysis.PlanCosts, error) {
	ao := pr.ao
	ao.OnRequest = nil
	res, err := analyzeTraces(ctx, c, pr.f.out.Quiet, []string{pr.trace}, pr.geom, pr.ro, ao)
	if err != nil {
		return nil, err
	}
	cfg := vllmsim.Config{Model: pr.geom.Model, Geometry: pr.geom, TimeScale: 1}
	ls := SimLengths(res[0].Analysis.Input, vllmsim.DefaultMaxModelLen-1024)
	costs, err := SimCosts(cfg, ls)
	if err == nil {
		c.Logf("costs: kvtier sim's cost model (simulated, calibrated to the H20 reference) at L = %s, the trace's input p10, p50, p90, p99 and max (capped by the context)", tokenList(ls))
	}
	return costs, err
}

// SimLengths are the prefix lengths a plan's simulated costs are taken
// at: the input lengths' p10, p50, p90, p99 and maximum, each at most
// limit, each once, at least two.
func SimLengths(in results.Stats, limit int) []int64 {
	var ls []int64
	for _, v := range []float64{in.P10, in.P50, in.P90, in.P99, in.Max} {
		if v >= 1 {
			ls = append(ls, min(int64(math.Ceil(v)), int64(limit)))
		}
	}
	slices.Sort(ls)
	ls = slices.Compact(ls)
	if len(ls) == 1 {
		ls = append([]int64{max(ls[0]/2, 1)}, ls...)
	}
	return ls
}

// SimCosts are the plan costs of a kvtier sim of cfg: its cost model's
// TTFT of every probe tier at each of ls, in closed form (no request is
// sent), labelled simulated.
func SimCosts(cfg vllmsim.Config, ls []int64) (*analysis.PlanCosts, error) {
	var rows []results.Row
	for _, tier := range tierspec.ProbeNames() {
		for _, L := range ls {
			ttft := vllmsim.EstimateTTFT(cfg, tier, int(L), 0)
			if !(ttft > 0) {
				return nil, fmt.Errorf("kvtier sim has no cost for %s at %d tokens (model %s)", tier, L, cfg.Model)
			}
			r := results.NewRow(costsProbeSuite)
			r.Tier, r.PrefixTokens, r.Status, r.Model = tier, L, results.StatusOK, cfg.Model
			r.SetTime(ttft)
			r.Set(results.ColTTFT, ttft)
			r.Set(results.ColVerified, true)
			r.Set(results.ColSimulated, true)
			rows = append(rows, r)
		}
	}
	return analysis.LoadPlanCosts("kvtier sim (cost model, closed form)", nil, rows)
}

// costsProbeSuite is the suite whose rows SimCosts writes: the probe's,
// whose TTFT per tier the plan fits.
const costsProbeSuite = "probe"

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
