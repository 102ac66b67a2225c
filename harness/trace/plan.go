package trace

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/workload"
)

// PlanTiers lists the plan names of the tiers (tierspec) in serving
// order; the last, recompute, serves what no tier holds. CapacityTiers
// are those that hold blocks: all but the last.
var (
	PlanTiers     = tierspec.PlanNames()
	CapacityTiers = tierspec.CapacityNames()
)

// A Config is one capacity configuration: bytes per tier by plan name
// (absent or 0 none, Unbounded without limit).
type Config map[string]int64

// capacities returns c's bytes of each of tiers, in their order.
func (c Config) capacities(tiers []string) []int64 {
	out := make([]int64, len(tiers))
	for i, t := range tiers {
		out[i] = c[t]
	}
	return out
}

// A CostModel predicts what a request costs from the tokens each tier
// serves it. The plan never invents a cost: a tier the model does not
// have is named as missing.
type CostModel interface {
	// Has reports whether the model has a measured cost for the tier.
	Has(tier string) bool
	// Predict returns the predicted KV-load seconds (the fetches of the
	// tiers it has a cost for) and TTFT seconds (NaN unless every tier
	// that served tokens, recompute included, has a cost) of a request
	// of input tokens served served tokens by each plan tier, indexed
	// as tierspec.PlanNames, recompute (last) being the tokens after
	// the hit.
	Predict(served analysis.Served, input int64) (load, ttft float64)
	// Extrapolated reports whether that prediction reads a cost past the
	// longest prefix it was measured at.
	Extrapolated(served analysis.Served, input int64) bool
	// PastLimit reports whether it would read a cost past the limit the
	// model extrapolates to: the request is counted, not predicted. It
	// implies Extrapolated (the limit lies past the measured range).
	PastLimit(served analysis.Served, input int64) bool
	// Store returns the measured cost of storing into a tier, a fixed
	// cost per store and its bandwidth in bytes/s; ok is false where the
	// tier's store was not measured.
	Store(tier string) (alpha, rate float64, ok bool)
	// Source says where the costs were measured: "GPU measured", "host
	// stand-in", "simulated", or a mix of them.
	Source() string
}

// PlanOptions say what a Planner evaluates.
type PlanOptions struct {
	Configs    []Config
	Inclusive  bool  // write-through tiers: each holds the most recent blocks that fit it
	BlockBytes int64 // KV bytes of one block of the trace's block size
	Costs      CostModel
	// Roles say why each of Configs is evaluated (the grid where nil or
	// short); the results carry them.
	Roles []Role
}

// Validate reports every unusable option, naming it.
func (o PlanOptions) Validate() error {
	var errs []error
	if len(o.Configs) == 0 {
		errs = append(errs, option.Errorf(CapacityTiers[0], "no capacity configuration"))
	}
	if o.BlockBytes <= 0 {
		errs = append(errs, option.Errorf("model", "block bytes %d: must be positive", o.BlockBytes))
	}
	if o.Costs == nil {
		errs = append(errs, option.Errorf("costs", "no cost model"))
	}
	return errors.Join(errs...)
}

// A Planner evaluates capacity configurations over a trace's stack
// distances. Give Observe to the analyzer as AnalyzeOptions.OnRequest.
type Planner struct {
	o PlanOptions
	// tiers are the plan's tiers in serving order, the compute tier
	// last; caps are those that hold blocks.
	tiers, caps []string
	has         []bool        // per tier: the cost model has its cost
	blocks      [][]int64     // per config: capacity in blocks per tier of caps
	ends        [][]int64     // per config: the deepest distance each tier of caps serves
	rules       [][]writeRule // per config: when each tier of caps is written
	reach       []int64       // per config: the deepest distance any tier serves
	evals       []planEval
	byTier      analysis.Served // one request's tokens per tier, for the cost model
	sorted      []int64         // one request's distances, ascending
	// memo holds this request's predictions, one per distinct split of
	// its tokens over the tiers: configurations often split it alike.
	memo        []prediction
	distinct    int64   // blocks referenced so far: the depth of the LRU stack
	first, last float64 // arrival of the first and last request, seconds
	requests    int
	notes       []string // capacities rounded down to whole blocks, one line per flag
}

// A prediction is what the cost model says of one split of a request's
// tokens over the tiers.
type prediction struct {
	served     []int64 // per tier
	extrap     bool
	past       bool
	load, ttft float64
}

type planEval struct {
	tokens     []int64 // per tier, recompute included
	input      int64
	load, ttft tally
	extrap     int // requests predicted past the measured range
	past       int // requests past the extrapolation limit: counted, not predicted
	// Per tier of Planner.caps: blocks written into it and the requests
	// that wrote any (one store each).
	writes, stores []int64
}

// NewPlanner returns a Planner for the options.
func NewPlanner(o PlanOptions) (*Planner, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p := &Planner{o: o, tiers: tierspec.PlanNames(), caps: tierspec.CapacityNames()}
	p.byTier = make(analysis.Served, len(p.tiers))
	for _, t := range p.tiers {
		p.has = append(p.has, o.Costs.Has(t))
	}
	for _, c := range o.Configs {
		b := c.capacities(p.caps)
		for i, bytes := range b {
			if bytes != workload.Unbounded {
				var note string
				b[i], note = units.Blocks(bytes, o.BlockBytes)
				p.noteRounding(p.caps[i], note)
			}
		}
		p.blocks = append(p.blocks, b)
		ends := p.tierEnds(b)
		p.ends = append(p.ends, ends)
		p.rules = append(p.rules, p.writeRules(b, ends))
		p.reach = append(p.reach, slices.Max(ends))
		p.evals = append(p.evals, planEval{tokens: make([]int64, len(p.tiers)),
			writes: make([]int64, len(p.caps)), stores: make([]int64, len(p.caps))})
	}
	return p, nil
}

// noteRounding adds a capacity's rounding note, unless empty or said,
// to the line of its tier's flag.
func (p *Planner) noteRounding(tier, note string) {
	prefix := "--" + tier + " "
	if note == "" || slices.ContainsFunc(p.notes, func(n string) bool {
		return strings.HasPrefix(n, prefix) && slices.Contains(strings.Split(n[len(prefix):], "; "), note)
	}) {
		return
	}
	for i, n := range p.notes {
		if strings.HasPrefix(n, prefix) {
			p.notes[i] += "; " + note
			return
		}
	}
	p.notes = append(p.notes, prefix+note)
}

// Rounding says which capacities were not a whole number of blocks
// and how they were rounded, one line per capacity flag ("--dram 512
// GiB is not ...; 2 TiB is not ..."); nil when all were.
func (p *Planner) Rounding() []string { return p.notes }

// tierEnds returns, per tier of caps (capacities in blocks), the deepest
// stack distance it serves: its capacity when tiers are inclusive, the
// capacities down to it summed when exclusive (Unbounded from an
// unbounded tier on).
func (p *Planner) tierEnds(caps []int64) []int64 {
	ends := make([]int64, len(caps))
	var below int64
	for i, c := range caps {
		switch {
		case p.o.Inclusive:
			ends[i] = c
		case c == workload.Unbounded || below == workload.Unbounded:
			below = workload.Unbounded
			ends[i] = below
		default:
			below += c
			ends[i] = below
		}
	}
	return ends
}

// tierOf returns the index in p.caps of the tier serving a block at
// stack distance d, given the tiers' deepest distances (tierEnds); -1
// when no tier holds it. A block never seen before (Inf) is in none,
// however large a tier.
func tierOf(ends []int64, d int64) int {
	if d == workload.Inf {
		return -1
	}
	for i, e := range ends {
		if d <= e {
			return i
		}
	}
	return -1
}

// Observe evaluates one request with its stack distances in every
// configuration: the leading run of blocks some tier holds is the hit,
// each block of it served by the tier its own distance falls in.
func (p *Planner) Observe(r *workload.Request, h *workload.Hits) {
	p.memo = p.memo[:0]
	p.sorted = append(p.sorted[:0], h.Dist...)
	slices.Sort(p.sorted)
	for ci, ends := range p.ends {
		// Tokens per tier by index: a map write per block and
		// configuration was most of a plan's time.
		clear(p.byTier)
		var hit int64
		for k, lead := range h.Lead {
			if lead == workload.Inf || lead > p.reach[ci] {
				break
			}
			t := int64(h.Tokens[k])
			p.byTier[tierOf(ends, h.Dist[k])] += t
			hit += t
		}
		p.byTier[len(p.tiers)-1] = int64(h.Input) - hit
		e := &p.evals[ci]
		for i, n := range p.byTier {
			e.tokens[i] += n
		}
		e.input += int64(h.Input)
		p.predict(e, int64(h.Input))
		p.countWrites(e, p.rules[ci], p.sorted)
	}
	if p.requests == 0 {
		p.first = r.Time
	}
	p.requests++
	p.last = r.Time
	for _, d := range h.Dist {
		if d == workload.Inf {
			p.distinct++
		}
	}
}

// predict adds the predicted load and TTFT of a request of input tokens
// served p.byTier to e, or counts it past the extrapolation limit.
func (p *Planner) predict(e *planEval, input int64) {
	m := p.prediction(input)
	if m.past {
		e.past++
		return
	}
	if m.extrap {
		e.extrap++
	}
	e.load.add(m.load)
	e.ttft.add(m.ttft)
}

// prediction returns the cost model's prediction for the request's
// split p.byTier, asking the model once per distinct split.
func (p *Planner) prediction(input int64) prediction {
	for _, m := range p.memo {
		if slices.Equal(m.served, p.byTier) {
			return m
		}
	}
	// A cost past the limit is past the measured range too: most
	// requests are within it and ask once.
	var m prediction
	m.extrap = p.o.Costs.Extrapolated(p.byTier, input)
	m.past = m.extrap && p.o.Costs.PastLimit(p.byTier, input)
	if !m.past {
		m.load, m.ttft = p.o.Costs.Predict(p.byTier, input)
	}
	// The slice a former request's prediction held is reused.
	i := len(p.memo)
	if i < cap(p.memo) {
		p.memo = p.memo[:i+1]
	} else {
		p.memo = append(p.memo, prediction{})
	}
	m.served = append(p.memo[i].served[:0], p.byTier...)
	p.memo[i] = m
	return m
}

// A writeRule says when a request's block is written into one tier
// under LRU: when its distance is past thr, once the LRU stack holds
// depth blocks; never when skip.
//
// Exclusive tiers: a block not in HBM is written into HBM, and every
// reference from below tier i−1's last position pushes the block there
// down into tier i (once the tiers above hold that many blocks).
// Inclusive tiers: a tier of S blocks is written every block referenced
// from below its S most recent. Distances are those at the request's
// arrival; a block never seen is written into every tier it enters.
type writeRule struct {
	thr, depth int64
	skip       bool
}

// writeRules returns the write rule of each tier of caps, whose deepest
// distances are ends (tierEnds).
func (p *Planner) writeRules(caps, ends []int64) []writeRule {
	rules := make([]writeRule, len(caps))
	for i, c := range caps {
		thr, depth := c, int64(0)
		if !p.o.Inclusive && i > 0 {
			thr, depth = ends[i-1], ends[i-1]
		}
		switch {
		case c == 0:
			rules[i].skip = true
		case thr == workload.Unbounded && (p.o.Inclusive || i == 0):
			rules[i].thr = workload.Inf - 1 // only new blocks enter an unbounded tier
		case thr == workload.Unbounded:
			rules[i].skip = true // nothing is evicted from above
		default:
			rules[i] = writeRule{thr: thr, depth: depth}
		}
	}
	return rules
}

// countWrites adds the blocks the request writes into each tier; sorted
// are its blocks' distances in ascending order.
func (p *Planner) countWrites(e *planEval, rules []writeRule, sorted []int64) {
	for i, w := range rules {
		if w.skip || p.distinct < w.depth {
			continue
		}
		past, _ := slices.BinarySearch(sorted, w.thr+1) // the first past thr
		if n := int64(len(sorted) - past); n > 0 {
			e.writes[i] += n
			e.stores[i]++
		}
	}
}

// A PlanResult is one configuration's prediction.
type PlanResult struct {
	Config    Config
	Role      Role
	Inclusive bool
	// Tiers are the plan's tiers in serving order, the compute tier
	// last.
	Tiers  []string
	Input  int64            // input tokens of the trace
	Tokens map[string]int64 // tokens served per tier, recompute included
	// Load and TTFT are the predicted per-request KV-load time and TTFT
	// (N = 0 where nothing could be predicted).
	Load, TTFT results.Stats
	// LoadMissing names the tiers that served tokens with no measured
	// cost: Load leaves their fetches out. TTFTMissing adds recompute
	// when it has no cost; TTFT is not predicted when it is not empty.
	LoadMissing, TTFTMissing []string
	Source                   string
	// Extrapolated is the share of requests whose prediction reads a
	// cost past the longest prefix it was measured at.
	Extrapolated float64
	// PastLimit is the share of requests past the extrapolation limit:
	// counted, left out of Load and TTFT.
	PastLimit float64
	// Writes are the required write rates of the tiers that hold blocks
	// (Tiers but the last) against their measured stores.
	Writes []TierWrites
}

// TierWrites is the write rate a tier must absorb over a trace, and
// whether its measured store keeps up.
type TierWrites struct {
	BlocksPerSec, BytesPerSec float64
	// Utilisation is the share of the tier's store path the writes need:
	// one store per request that writes (its fixed cost) plus the bytes
	// at the measured bandwidth, per second of trace. NaN where the
	// tier's store was not measured (not checked, never 0).
	Utilisation float64
	Checked     bool
}

// Over reports whether the writes need more than the measured store.
func (w TierWrites) Over() bool { return w.Checked && w.Utilisation > 1 }

// Fraction returns the share of input tokens tier served.
func (r PlanResult) Fraction(tier string) float64 {
	if r.Input == 0 {
		return math.NaN()
	}
	return float64(r.Tokens[tier]) / float64(r.Input)
}

// Results returns the prediction of every configuration.
func (p *Planner) Results() []PlanResult {
	var out []PlanResult
	for ci, c := range p.o.Configs {
		e := p.evals[ci]
		r := PlanResult{Config: c, Inclusive: p.o.Inclusive, Tiers: p.tiers, Input: e.input, Tokens: map[string]int64{}, Source: p.o.Costs.Source()}
		if ci < len(p.o.Roles) {
			r.Role = p.o.Roles[ci]
		}
		for i, t := range p.tiers {
			if e.tokens[i] > 0 || t == p.recomputed() {
				r.Tokens[t] = e.tokens[i]
			}
			// A tier served tokens with no cost: the tokens only add up.
			usedMissing := e.tokens[i] > 0 && !p.has[i]
			if usedMissing && t != p.recomputed() {
				r.LoadMissing = append(r.LoadMissing, t)
			}
			if usedMissing {
				r.TTFTMissing = append(r.TTFTMissing, t)
			}
		}
		if n := e.load.added + e.past; n > 0 {
			r.Extrapolated, r.PastLimit = float64(e.extrap)/float64(n), float64(e.past)/float64(n)
		}
		r.Writes = p.writes(e)
		r.Load = e.load.stats()
		if len(r.TTFTMissing) == 0 {
			r.TTFT = e.ttft.stats()
		} else {
			r.TTFT = results.Describe(nil)
		}
		out = append(out, r)
	}
	return out
}

// writes returns the tiers' write rates over the trace's span.
func (p *Planner) writes(e planEval) []TierWrites {
	out := make([]TierWrites, len(p.caps))
	span := p.last - p.first
	for i := range out {
		w := TierWrites{Utilisation: math.NaN()}
		if span > 0 {
			w.BlocksPerSec = float64(e.writes[i]) / span
			w.BytesPerSec = w.BlocksPerSec * float64(p.o.BlockBytes)
		}
		if alpha, rate, ok := p.o.Costs.Store(p.caps[i]); ok && span > 0 && rate > 0 {
			w.Checked = true
			w.Utilisation = (float64(e.stores[i])*max(alpha, 0) + float64(e.writes[i])*float64(p.o.BlockBytes)/rate) / span
		}
		out[i] = w
	}
	return out
}

// recomputed returns the plan name of the tier that serves what no tier
// holds.
func (p *Planner) recomputed() string { return p.tiers[len(p.tiers)-1] }

// recomputed returns the plan name of the tier that serves what no tier
// holds.
func (r PlanResult) recomputed() string { return r.Tiers[len(r.Tiers)-1] }

func sortedUnique(xs []int64) []int64 {
	slices.Sort(xs)
	return slices.Compact(xs)
}

// PlanColumns follow results.CommonSchema in plan.csv: one row per
// capacity configuration (seconds = predicted TTFT p50).
var PlanColumns = slices.Concat(
	configColumns,
	[]results.Column{
		results.Bool(results.ColInclusive, "write-through tiers: each holds the most recent blocks that fit it"),
		results.Text(results.ColTouch, "forward | reverse"),
		results.Float(results.ColHitRatio, "fraction", "predicted prefix hit: tokens some tier served / input tokens"),
	},
	perTier(PlanTiers, "frac_%s", func(t string) results.Column {
		return results.Float("", "fraction", "share of the input tokens "+t+" served")
	}),
	[]results.Column{
		results.Int("recomputed_tokens", "tokens", "input tokens no tier held"),
		results.Float("load_mean_s", "s", "predicted KV-load time per request: mean"),
		results.Float(results.ColLoadP50, "s", "predicted KV-load time per request: p50"),
		results.Float(results.ColLoadP90, "s", "predicted KV-load time per request: p90"),
		results.Float("load_p99_s", "s", "predicted KV-load time per request: p99"),
		results.Text(results.ColLoadExcludes, "tiers that served tokens with no measured cost, left out of load_*"),
		results.Float("ttft_mean_s", "s", "predicted TTFT: mean"),
		results.Float(results.ColTTFTP50, "s", "predicted TTFT: p50"),
		results.Float(results.ColTTFTP90, "s", "predicted TTFT: p90"),
		results.Float(results.ColTTFTP99, "s", "predicted TTFT: p99"),
		results.Text(results.ColMissing, "tiers with no measured cost that this configuration needs: TTFT not predicted"),
		results.Float(results.ColExtrapolated, "fraction", "share of requests predicted from a cost past the longest prefix it was measured at (up to the limit)"),
		results.Float(results.ColPastLimit, "fraction", "share of requests past the extrapolation limit (twice the longest prefix measured): counted, not predicted, left out of load_* and ttft_*"),
	},
	perTier(CapacityTiers, "write_%s_Bps", func(t string) results.Column {
		return results.Float("", "B/s", "bytes/s "+t+" must absorb")
	}),
	perTier(CapacityTiers, "store_util_%s", func(t string) results.Column {
		return results.Float("", "ratio", "the share of "+t+"'s measured store its writes need; empty where not checked")
	}),
	[]results.Column{
		results.Text("store_over", "tiers whose writes exceed their measured store (utilisation > 1)"),
		results.Text(results.ColStoreUnchecked, "tiers written to with no measured store: not checked"),
		results.Text(results.ColCostSource, "GPU measured | host stand-in | simulated"),
		results.Text(results.ColCosts, "the results directory the costs come from"),
		results.Bool(results.ColPredicted, "always true"),
	},
)

// perTier declares one column per tier, named by format: decl says what
// the column is for tier t.
func perTier(names []string, format string, decl func(t string) results.Column) []results.Column {
	out := make([]results.Column, len(names))
	for i, t := range names {
		out[i] = decl(t)
		out[i].Name = fmt.Sprintf(format, t)
	}
	return out
}

// PlanCostColumns are the whole header of plan_costs.csv: the cost of
// each plan tier, or why it is missing.
var PlanCostColumns = []results.Column{
	results.Text(results.ColTier, "the plan tier"),
	results.Bool(results.ColMeasured, "true, or false with the reason"),
	results.Text(results.ColSource, "GPU measured | host stand-in | simulated"),
	results.Text(results.ColConfig, "the measured configuration the cost is fitted to"),
	results.Text(results.ColFormula, "the cost model the tier was fitted with"),
	results.Float(results.ColAlpha, "s", "the fit's intercept (its fixed cost: α of α + bytes/rate, C of C + A·L + B·L²)"),
	results.Float(results.ColLinear, "s/token", "C + A·L + B·L²: A, the cost per token (projections, MLP, a copy)"),
	results.Float(results.ColQuadratic, "s/token²", "C + A·L + B·L²: B, attention's cost per token pair"),
	results.Float(results.ColRate, "", "the fit's rate, in rate_unit"),
	results.Text(results.ColRateUnit, "B/s | FLOP/s"),
	results.Float("r2", "", "the fit's R²"),
	results.Int("n", "count", "points fitted"),
	results.Int("min_tokens", "tokens", "the shortest prefix measured"),
	results.Int("max_tokens", "tokens", "the longest prefix measured"),
	results.Text(results.ColReason, "why the cost is missing"),
	results.Text(results.ColCosts, "the results directory the costs come from"),
	results.Text(results.ColFitProblem, "what is wrong with the fit (a negative fixed cost, a poor R²); empty when sound"),
	results.Float(results.ColStoreAlpha, "s", "the tier's measured store: fixed cost; empty where not measured"),
	results.Float(results.ColStoreRate, "B/s", "the tier's measured store: rate; empty where not measured"),
}

// PlanSuite declares what kvtier plan writes besides the trace's files.
var PlanSuite = results.Suite{
	Name: "plan", Title: "Plan: tier capacities and predicted TTFT", Command: "kvtier plan", Order: 61,
	Files: []results.File{
		{Name: PlanFile, Columns: PlanColumns}, // predictions, one per configuration: nothing to compare
		{Name: PlanCostsFile, Columns: PlanCostColumns, Raw: true},
		{Name: PlanCheckFile, Columns: PlanCheckColumns}, // the recommendation checked: predicted beside realized
	},
}

// PlanRows returns the plan.csv rows of a trace's plan.
func PlanRows(res *Result, plan []PlanResult, costsDir string) []results.Row {
	var rows []results.Row
	for _, p := range plan {
		r := results.NewRow(PlanSuite.Name)
		r.Backend, r.Model, r.Status = Backend, res.Model, results.StatusOK
		setConfig(&r, res, p)
		r.Set(results.ColInclusive, p.Inclusive)
		r.Set(results.ColTouch, string(res.Analysis.Touch))
		r.Set(results.ColHitRatio, 1-p.Fraction(p.recomputed()))
		for _, t := range p.Tiers {
			r.Set("frac_"+t, p.Fraction(t))
		}
		r.Set("recomputed_tokens", p.Tokens[p.recomputed()])
		for _, s := range []struct {
			name string
			d    results.Stats
		}{{"load", p.Load}, {"ttft", p.TTFT}} {
			r.Set(s.name+"_mean_s", s.d.Mean)
			r.Set(s.name+"_p50_s", s.d.P50)
			r.Set(s.name+"_p90_s", s.d.P90)
			r.Set(s.name+"_p99_s", s.d.P99)
		}
		r.Seconds = p.TTFT.P50
		r.Set(results.ColLoadExcludes, strings.Join(p.LoadMissing, ";"))
		r.Set(results.ColMissing, strings.Join(p.TTFTMissing, ";"))
		r.Set(results.ColExtrapolated, p.Extrapolated)
		r.Set(results.ColPastLimit, p.PastLimit)
		setWrites(&r, p)
		if len(p.TTFTMissing) > 0 {
			r.Reason = "TTFT not predicted: no measured cost for " + strings.Join(p.TTFTMissing, ", ")
		}
		r.Set(results.ColCostSource, p.Source)
		r.Set(results.ColCosts, costsDir)
		r.Set(results.ColPredicted, true)
		rows = append(rows, r)
	}
	return rows
}

// setWrites sets the write columns of a plan row.
func setWrites(r *results.Row, p PlanResult) {
	var over, unchecked []string
	for i, w := range p.Writes {
		t := p.Tiers[i]
		r.Set("write_"+t+"_Bps", w.BytesPerSec)
		if w.Checked {
			r.Set("store_util_"+t, w.Utilisation)
		}
		switch {
		case w.Over():
			over = append(over, t)
		case !w.Checked && w.BlocksPerSec > 0:
			unchecked = append(unchecked, t)
		}
	}
	r.Set("store_over", strings.Join(over, ";"))
	r.Set(results.ColStoreUnchecked, strings.Join(unchecked, ";"))
}

// FormatCapacityBytes writes a capacity for a CSV cell: bytes, or "inf".
func FormatCapacityBytes(b int64) string {
	if b == workload.Unbounded {
		return "inf"
	}
	return strconv.FormatInt(b, 10)
}
