package trace

import (
	"math"
	"path/filepath"
	"strconv"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/workload"
)

// The files of the trace and plan suites.
const (
	File          = "trace.csv"         // a trace's figures, one row each
	CurveFile     = "trace_curve.csv"   // raw: LRU hit ratio vs capacity
	WindowsFile   = "trace_windows.csv" // raw: working set per sliding window over time
	PlanFile      = "plan.csv"          // one row per capacity configuration
	PlanCostsFile = "plan_costs.csv"    // raw: the tier costs a plan used, or why missing
)

// Backend is the backend column of trace and plan rows: figures computed
// from a trace, not measured on a device.
const Backend = "trace"

// Columns several of the trace suite's files (and plan.csv) share.
var (
	traceName   = results.Text(results.ColTrace, "the trace file's name")                                         // the trace a row is about
	sampleRate  = results.Float(results.ColSampleRate, "fraction", "the share of hash ids sampled; 1 when exact") // how much of the trace an LRU figure read
	blockTokens = results.Int(results.ColBlockTokens, "tokens", "tokens per hash id")                             // the trace's block
)

// TraceColumns follow results.CommonSchema in trace.csv: one row per
// figure.
var TraceColumns = []results.Column{
	traceName,
	results.Text(results.ColFormat, "mooncake | alibaba"),
	blockTokens,
	results.Text(results.ColMetric, "the figure: requests, input_tokens, apc_ceiling_any, knee50, knee90, knee95, knee99 (--knees), working_set_peak, ..."),
	results.Text(results.ColStat, `mean | p50 | p90 | p99 | max; "" for a single figure`),
	results.Float(results.ColValue, "", "the figure, in the row's unit"),
	results.Text("unit", "the value's unit: count | tokens | bytes | s | fraction"),
	results.Bool(results.ColPredicted, "true for the LRU model's figures (curves, knees), false for counts"),
	results.Text(results.ColMethod, "exact | shards (sampled)"),
	sampleRate,
	results.Float(results.ColErrorPP, "pp", `SHARDS: the error bound in hit-ratio points; "" exact`),
	results.Int(results.ColInstances, "count", "knees: the instance count"),
	results.Text(results.ColRoute, "knees of several instances: the router"),
	results.Float(results.ColWindow, "s", "working set: the window"),
	results.Text(results.ColTouch, "forward | reverse: the order the LRU model was fed"),
	results.Text(results.ColNote, "what else the figure wants said"),
}

// CurveColumns are the whole header of trace_curve.csv: the LRU model's
// hit ratio against the capacity per instance.
var CurveColumns = []results.Column{
	traceName,
	results.Text(results.ColModel, "the model whose KV geometry sized the blocks"),
	blockTokens,
	results.Int("block_bytes", "B", "KV bytes of one block"),
	results.Int(results.ColInstances, "count", "instances the trace is spread over"),
	results.Text(results.ColRoute, "the router of several instances"),
	results.Text(results.ColTouch, "forward | reverse"),
	results.Int(results.ColCapacityBlocks, "blocks", "the cache per instance"),
	results.Int(results.ColCapacityTokens, "tokens", "the cache per instance"),
	results.Int(results.ColCapacityBytes, "B", "the cache per instance"),
	results.Float(results.ColHitRatio, "fraction", "predicted prefix hit ratio at this capacity"),
	results.Float("hit_tokens", "tokens", "predicted hit tokens at this capacity"),
	results.Float(results.ColCeiling, "fraction", "the hit ratio of an infinite cache"),
	results.Float("stderr", "fraction", `SHARDS: the hit ratio's standard error, from the spread of its 8 sub-samples; "" exact`),
	results.Float("band", "fraction", `SHARDS: the hit ratio's ± band at this capacity: 2.365 standard errors plus the curve's rise over one sub-sample slot (8/R blocks) either side, which held the exact curve at ≥ 90 % of capacities in tests; "" exact`),
	results.Text(results.ColMethod, "exact | shards"),
	sampleRate,
	results.Bool(results.ColPredicted, "always true: the LRU model's"),
}

// WindowColumns are the whole header of trace_windows.csv: the working
// set per sliding window over time.
var WindowColumns = []results.Column{
	traceName,
	results.Float(results.ColWindow, "s", "the window's length"),
	results.Float(results.ColTime, "s", "the window's end, seconds since the trace's first request"),
	results.Float(results.ColDistinctBlocks, "blocks", "distinct blocks referenced in the window (SHARDS: scaled up)"),
	results.Int(results.ColKVBytes, "B", "their KV"),
	results.Text(results.ColMethod, "exact | shards"),
	sampleRate,
}

// Suite declares what kvtier trace writes.
var Suite = results.Suite{
	Name: "trace", Title: "Trace: reuse, LRU capacity and working set", Command: "kvtier trace", Order: 60,
	Files: []results.File{
		{Name: File, Columns: TraceColumns}, // single figures: nothing for compare to test
		{Name: CurveFile, Columns: CurveColumns, Raw: true},
		{Name: WindowsFile, Columns: WindowColumns, Raw: true},
	},
}

func init() {
	results.RegisterSuite(Suite)
	results.RegisterSuite(PlanSuite)
}

// A Result is one trace's analysis with what identifies it in rows.
type Result struct {
	Path     string // the trace file
	Model    string // the geometry's model
	Read     workload.ReadStats
	Analysis *workload.Analysis
}

// Name is the trace column: the file's base name.
func (res *Result) Name() string { return filepath.Base(res.Path) }

// row returns a trace.csv row for metric and stat.
func (res *Result) row(metric, stat string, v float64, unit string, predicted bool) results.Row {
	a := res.Analysis
	r := results.NewRow(Suite.Name)
	r.Backend, r.Model, r.Status = Backend, res.Model, results.StatusOK
	r.Set(results.ColTrace, res.Name())
	r.Set(results.ColFormat, string(res.Read.Format))
	r.Set(results.ColBlockTokens, res.Read.BlockTokens)
	r.Set(results.ColMetric, metric)
	r.Set(results.ColStat, stat)
	r.Set(results.ColValue, v)
	r.Set("unit", unit)
	r.Set(results.ColPredicted, predicted)
	r.Set(results.ColMethod, a.Method)
	r.Set(results.ColSampleRate, a.Sample)
	if a.Method != workload.MethodExact {
		r.Set(results.ColErrorPP, 100*a.ErrorBound())
	}
	r.Set(results.ColTouch, string(a.Touch))
	return r
}

// Rows returns the trace.csv rows of the result.
func (res *Result) Rows() []results.Row {
	a := res.Analysis
	var rows []results.Row
	add := func(metric, stat string, v float64, unit string) {
		rows = append(rows, res.row(metric, stat, v, unit, false))
	}
	add("requests", "", float64(a.Requests), "count")
	sess := res.row("sessions", "", float64(a.Sessions), "count", false)
	if !a.SessionsKnown {
		sess.Set(results.ColNote, "the trace has no session ids: one session per request")
	}
	rows = append(rows, sess)
	bad := res.row("malformed_lines", "", float64(res.Read.Malformed), "count", false)
	bad.Set(results.ColNote, res.Read.BadLines())
	rows = append(rows, bad)
	add("block_refs", "", float64(a.BlockRefs), "count")
	add("distinct_blocks", "", float64(a.Distinct), "count")
	add("span", "", a.Span, "s")
	for _, d := range []struct {
		metric, unit string
		s            results.Stats
	}{{"input_tokens", "tokens", a.Input}, {"output_tokens", "tokens", a.Output}, {"kv_footprint", "bytes", a.Footprint}, {"think", "s", a.Think}} {
		for _, st := range []struct {
			name string
			v    float64
		}{{"mean", d.s.Mean}, {"p50", d.s.P50}, {"p90", d.s.P90}, {"p99", d.s.P99}, {"max", d.s.Max}} {
			add(d.metric, st.name, st.v, d.unit)
		}
	}
	add("top1pct_sessions_input_share", "", a.TopSessionShare, "fraction")
	add("apc_ceiling_any", "", a.CeilingAny, "fraction")
	add("apc_ceiling_intra", "", a.CeilingIntra, "fraction")
	add("reuse_intra", "", a.ReuseIntra, "fraction")
	add("reuse_cross", "", a.ReuseCross, "fraction")
	shared := res.row("reuse_shared", "", a.ReuseShared, "fraction", false)
	shared.Set(results.ColNote, "hash ids referenced by at least "+strconv.Itoa(a.SharedSessions)+" sessions")
	rows = append(rows, shared)
	rows = append(rows, res.kneeRows()...)
	for _, w := range a.Windows {
		r := res.row("working_set_peak", "max", w.PeakBytes, "bytes", false)
		r.Set(results.ColWindow, w.Window)
		rows = append(rows, r)
	}
	return rows
}

// kneeRows returns the knees of every curve: the smallest capacity per
// instance reaching each of the analysis's shares of the ceiling.
func (res *Result) kneeRows() []results.Row {
	var rows []results.Row
	bt := int64(res.Read.BlockTokens)
	for _, c := range res.Analysis.Curves {
		for _, frac := range res.Analysis.Knees {
			blocks, ok := c.Knee(frac)
			r := res.row(KneeMetric(frac), "", math.NaN(), "bytes", true)
			if ok {
				r.Blocks, r.PrefixTokens, r.Bytes = blocks, blocks*bt, blocks*res.Analysis.BlockBytes
				r.Set(results.ColValue, float64(r.Bytes))
			} else {
				r.Status, r.Reason = results.StatusSkipped, "no reuse in the trace: the ceiling is 0"
			}
			r.Set(results.ColInstances, c.Instances)
			r.Set(results.ColRoute, string(c.Route))
			rows = append(rows, r)
		}
	}
	return rows
}

// KneeMetric is the trace.csv metric of the knee at frac of the
// ceiling: "knee90" for 0.9, "knee99.9" for 0.999.
func KneeMetric(frac float64) string {
	return "knee" + strconv.FormatFloat(math.Round(frac*1e6)/1e4, 'f', -1, 64)
}

// maxCurvePoints bounds the rows of one curve in trace_curve.csv: the
// curve in memory is exact at every capacity; the file holds every step
// or, past this many, this many capacities spaced on a log scale.
const maxCurvePoints = 2000

// CurveRows returns the trace_curve.csv rows: every curve at its steps
// and its knees.
func (res *Result) CurveRows() []results.Row {
	a := res.Analysis
	var rows []results.Row
	for _, c := range a.Curves {
		caps := c.Steps(maxCurvePoints)
		for _, f := range a.Knees {
			if k, ok := c.Knee(f); ok {
				caps = append(caps, k)
			}
		}
		caps = sortedUnique(caps)
		ceil := c.Ceiling()
		for _, cap := range caps {
			r := RawRow()
			r.Model = res.Model
			r.Set(results.ColTrace, res.Name())
			r.Set(results.ColBlockTokens, res.Read.BlockTokens)
			r.Set("block_bytes", a.BlockBytes)
			r.Set(results.ColInstances, c.Instances)
			r.Set(results.ColRoute, string(c.Route))
			r.Set(results.ColTouch, string(a.Touch))
			r.Set(results.ColCapacityBlocks, cap)
			r.Set(results.ColCapacityTokens, cap*int64(res.Read.BlockTokens))
			r.Set(results.ColCapacityBytes, cap*a.BlockBytes)
			r.Set(results.ColHitRatio, c.HitRatio(cap))
			r.Set("hit_tokens", c.HitTokens(cap))
			r.Set(results.ColCeiling, ceil)
			if a.Method != workload.MethodExact {
				r.Set("stderr", c.StdErr(cap))
				r.Set("band", c.Band(cap))
			}
			r.Set(results.ColMethod, a.Method)
			r.Set(results.ColSampleRate, a.Sample)
			r.Set(results.ColPredicted, true)
			rows = append(rows, r)
		}
	}
	return rows
}

// WindowRows returns the trace_windows.csv rows.
func (res *Result) WindowRows() []results.Row {
	a := res.Analysis
	var rows []results.Row
	for _, w := range a.Windows {
		for _, p := range w.Points {
			r := RawRow()
			r.Set(results.ColTrace, res.Name())
			r.Set(results.ColWindow, w.Window)
			r.Set(results.ColTime, p.T)
			r.Set(results.ColDistinctBlocks, p.Blocks)
			r.Set(results.ColKVBytes, int64(math.Round(p.Blocks*float64(a.BlockBytes)))) // an integer, as DuckDB should read it
			r.Set(results.ColMethod, a.Method)
			r.Set(results.ColSampleRate, a.Sample)
			rows = append(rows, r)
		}
	}
	return rows
}

// RawRow returns an empty row for a raw file (no common columns).
func RawRow() results.Row {
	return results.Row{Status: results.StatusOK, Extra: map[string]string{}}
}
