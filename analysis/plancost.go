package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/units"
)

// Cost sources, as every predicted figure is labelled.
const (
	SourceGPU      = "GPU measured"
	SourceStandIn  = "host stand-in"
	SourceSim      = "simulated"
	SourceHTTPReal = "measured (HTTP)"
)

// A planTier is a tier of a capacity plan by the names the plan, the
// sweep and the probe know it by ("" where the probe has none).
type planTier struct{ plan, sweep, probe string }

// planTiers returns the tiers of a capacity plan in serving order, the
// compute tier last. Tiers register in their packages' init, so the list
// is made once: Predict reads it for every request of every
// configuration, and sorting the registry there took 80 % of a plan.
// Callers must not modify it.
var planTiers = sync.OnceValue(func() []planTier {
	var out []planTier
	for _, d := range tierspec.PlanTiers() {
		out = append(out, planTier{d.Plan.Name, d.Name, d.Probe})
	}
	return slices.Clip(out)
})

// capacityTiers returns the plan tiers that hold blocks: all but the
// compute tier.
func capacityTiers() []planTier {
	ts := planTiers()
	return ts[: len(ts)-1 : len(ts)-1]
}

// A PlanTierCost is the measured cost of serving tokens from one plan
// tier, or why there is none.
type PlanTierCost struct {
	Tier     string // hbm, dram, disk, remote, recompute
	Measured bool
	Source   string // SourceGPU, SourceStandIn, SourceSim, SourceHTTPReal
	Config   string // the configuration measured
	Model    string // the formula the cost follows
	Fit      *Fit   // device sweep: the fitted cost
	// Points are the probe's TTFT p50 per prefix length, by length, and
	// Growth the cost fitted to them.
	Points [][2]float64
	Growth *Growth
	Reason string // why not measured
}

// Problems returns what is wrong with the tier's fit, in words.
func (t PlanTierCost) Problems() []string {
	switch {
	case t.Fit != nil:
		return t.Fit.Problems
	case t.Growth != nil:
		return t.Growth.Problems
	}
	return nil
}

// MaxL returns the longest prefix the tier's cost was measured at.
func (t PlanTierCost) MaxL() float64 {
	switch {
	case t.Fit != nil:
		return float64(t.Fit.MaxL)
	case t.Growth != nil:
		return t.Growth.MaxL
	}
	return math.NaN()
}

// PlanCosts are the tier costs a capacity plan draws on: fitted from a
// device sweep (α + bytes/rate per fetch tier, α + FLOPs/rate for
// recompute), or the HTTP probe's TTFT per tier against prefix length.
// A tier without a measurement is missing, never filled in.
type PlanCosts struct {
	Dir   string
	Tiers []PlanTierCost // one per plan tier, in serving order
	Model string         // the model the costs were measured for ("" unknown)
	// Stores are the fitted store costs of the tiers whose store the
	// sweep measured (rows with direction=store), by plan tier.
	Stores map[string]*Fit
	probe  bool
}

// LoadPlanCosts returns the plan costs of the results directory dir
// from its device sweep's rows when it has measured ones, else from its
// HTTP probe's.
func LoadPlanCosts(dir string, sweep, probe []results.Row) (*PlanCosts, error) {
	c := &PlanCosts{Dir: dir}
	switch {
	case anyOK(sweep):
		c.fromSweep(results.Loads(sweep)) // a hit's cost is a load's
		c.storesFrom(sweep)
	case anyOK(probe):
		c.probe = true
		c.fromProbe(probe)
	default:
		return nil, fmt.Errorf("%s: no measured sweep or probe rows to take tier costs from", dir)
	}
	return c, nil
}

func anyOK(rows []results.Row) bool { return slices.ContainsFunc(rows, OK) }

// fromSweep picks, per tier, the fit of the configuration closest to a
// serving engine: a GPU backend before the stand-in, the layer-wise
// layout, batched copies before per-chunk ones, contiguous last (an upper
// bound, not a real layout).
func (c *PlanCosts) fromSweep(rows []results.Row) {
	fits, failed := Fits(rows)
	c.Model = modelOf(rows)
	for _, t := range planTiers() {
		pc := PlanTierCost{Tier: t.plan}
		var cands []Fit
		for _, f := range fits {
			if f.Key.Tier == t.sweep {
				cands = append(cands, f)
			}
		}
		if len(cands) == 0 {
			pc.Reason = missingReason(rows, failed, t.sweep)
			c.Tiers = append(c.Tiers, pc)
			continue
		}
		slices.SortStableFunc(cands, func(a, b Fit) int { return compareForPlan(a.Key, b.Key) })
		f := cands[0]
		pc.Measured, pc.Fit, pc.Config = true, &f, f.Key.Label()
		pc.Source = SourceGPU
		if IsStandIn(f.Key.Backend) {
			pc.Source = SourceStandIn
		}
		pc.Model = "α + bytes/rate"
		if f.Regressor == "flops" {
			pc.Model = "α + FLOPs/rate (FLOPs of the recomputed positions)"
		}
		c.Tiers = append(c.Tiers, pc)
	}
}

func compareForPlan(a, b SweepKey) int {
	rank := func(s string, order ...string) int {
		if i := slices.Index(order, s); i >= 0 {
			return i
		}
		return len(order)
	}
	stand := func(k SweepKey) int {
		if IsStandIn(k.Backend) {
			return 1
		}
		return 0
	}
	// The disk tier: reads through the page cache measure DRAM, so they
	// come last; of its I/O modes, what an engine would use first
	// (cuFile where it reaches GPU memory, then io_uring, then pread).
	cached := func(k SweepKey) int {
		if strings.HasPrefix(k.Path, "pagecache") {
			return 1
		}
		return 0
	}
	// An engine loads on its own GPU: `--gpu all`'s aggregate (every GPU
	// at once, the bytes summed) is no one engine's cost.
	return cmp.Or(
		cmp.Compare(stand(a), stand(b)),
		cmp.Compare(a.GPUs, b.GPUs),
		cmp.Compare(cached(a), cached(b)),
		cmp.Compare(rank(a.Layout, "layerwise", "blockwise", ""), rank(b.Layout, "layerwise", "blockwise", "")),
		cmp.Compare(rank(a.Copy, "batch", "percopy", ""), rank(b.Copy, "batch", "percopy", "")),
		cmp.Compare(rank(a.Transport, "cufile", "uring"), rank(b.Transport, "cufile", "uring")),
		CompareSweepKeys(a, b),
	)
}

// missingReason says why a sweep tier has no fit: not run, every row
// skipped (the first reason), or the fit failed.
func missingReason(rows []results.Row, failed []string, tier string) string {
	var reason string
	n := 0
	for _, r := range rows {
		if r.Tier == tier {
			n++
			if reason == "" && r.Reason != "" {
				reason = r.Reason
			}
		}
	}
	switch {
	case n == 0:
		return "not in these results (tier " + tier + " not run)"
	case reason != "":
		return "no measured rows: " + reason
	}
	for _, f := range failed {
		if strings.HasPrefix(f, tier+" ") {
			return "no fit: " + f
		}
	}
	return "no measured rows"
}

func modelOf(rows []results.Row) string {
	for _, r := range rows {
		if OK(r) && r.Model != "" {
			return r.Model
		}
	}
	return ""
}

// fromProbe takes, per tier, the p50 TTFT of the verified rows at each
// prefix length.
func (c *PlanCosts) fromProbe(rows []results.Row) {
	c.Model = modelOf(rows)
	for _, t := range planTiers() {
		pc := PlanTierCost{Tier: t.plan, Model: "probe TTFT p50 vs L fitted as C + A·L + B·L² (A, B, C ≥ 0)"}
		byL := map[float64][]float64{}
		sim := false
		for _, r := range rows {
			if t.probe != "" && r.Tier == t.probe && ProbeCounted(r) {
				byL[float64(r.PrefixTokens)] = append(byL[float64(r.PrefixTokens)], ProbeTTFT(r))
				sim = sim || r.Get(results.ColSimulated) == "true"
			}
		}
		if len(byL) == 0 {
			pc.Reason = probeMissing(rows, cmp.Or(t.probe, t.plan))
			c.Tiers = append(c.Tiers, pc)
			continue
		}
		for L, ys := range byL {
			pc.Points = append(pc.Points, [2]float64{L, Summarize(ys).P50})
		}
		sort.Slice(pc.Points, func(i, j int) bool { return pc.Points[i][0] < pc.Points[j][0] })
		pc.Config, pc.Source = "probe tier "+t.probe, SourceHTTPReal
		if sim {
			pc.Source = SourceSim
		}
		g, err := growthOf(pc.Points)
		if err != nil {
			pc.Reason = fmt.Sprintf("%s (measured at L = %s)", err, pointLengths(pc.Points))
			if len(pc.Points) < 2 {
				pc.Reason = fmt.Sprintf("measured at one prefix length only (%s): a cost needs a fit over at least two, so no TTFT is predicted from it; %s",
					pointLengths(pc.Points), WhatToRun)
			}
			c.Tiers = append(c.Tiers, pc)
			continue
		}
		pc.Growth, pc.Measured = g, true
		c.Tiers = append(c.Tiers, pc)
	}
}

// probeMissing says why a probe tier has no cost: the reason of its
// first skipped row, else that it has no verified row.
func probeMissing(rows []results.Row, tier string) string {
	for _, r := range rows {
		if r.Tier == tier && r.Status == results.StatusSkipped && r.Reason != "" {
			return r.Reason
		}
	}
	return "no verified probe rows of tier " + tier
}

// storesFrom keeps, per plan tier, the fit of the store configuration
// closest to a serving engine (as fromSweep picks loads).
func (c *PlanCosts) storesFrom(rows []results.Row) {
	var stores []results.Row
	for _, r := range rows {
		if !r.IsLoad() {
			stores = append(stores, r)
		}
	}
	fits, _ := Fits(stores)
	c.Stores = map[string]*Fit{}
	for _, t := range capacityTiers() {
		var best *Fit
		for i, f := range fits {
			if f.Key.Tier == t.sweep && (best == nil || compareForPlan(f.Key, best.Key) < 0) {
				best = &fits[i]
			}
		}
		if best != nil {
			c.Stores[t.plan] = best
		}
	}
}

// Store returns the fitted store cost of a plan tier: its fixed cost per
// store and bandwidth in bytes/s; ok is false where no store was
// measured.
func (c *PlanCosts) Store(tier string) (alpha, rate float64, ok bool) {
	f := c.Stores[tier]
	if f == nil || math.IsInf(f.Rate, 1) || !(f.Rate > 0) {
		return 0, 0, false
	}
	return f.Alpha, f.Rate, true
}

// tier returns the cost of a plan tier, nil when missing.
func (c *PlanCosts) tier(name string) *PlanTierCost {
	for i := range c.Tiers {
		if c.Tiers[i].Tier == name && c.Tiers[i].Measured {
			return &c.Tiers[i]
		}
	}
	return nil
}

// Has reports whether tier has a measured cost.
func (c *PlanCosts) Has(tier string) bool { return c.tier(tier) != nil }

// Source names where the measured costs come from, joined with " + "
// when the tiers differ.
func (c *PlanCosts) Source() string {
	var srcs []string
	for _, t := range c.Tiers {
		if t.Measured && !slices.Contains(srcs, t.Source) {
			srcs = append(srcs, t.Source)
		}
	}
	return strings.Join(srcs, " + ")
}

// Served is the tokens each plan tier serves one request, indexed as
// tierspec.PlanNames (the compute tier last: the tokens after the hit).
// A planner asks the cost model millions of times; a slice indexed by
// tier costs nothing beside a map keyed by its name.
type Served []int64

// ServedOf returns the Served of tokens by plan tier name; a name that
// is no plan tier is ignored.
func ServedOf(byName map[string]int64) Served {
	ts := planTiers()
	s := make(Served, len(ts))
	for i, t := range ts {
		s[i] = byName[t.plan]
	}
	return s
}

// at returns the tokens tier i of planTiers serves; a short Served
// serves none past its end.
func (s Served) at(i int) int64 {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// hit is the tokens the capacity tiers serve: the input less those
// recomputed.
func (s Served) hit(input int64) int64 { return input - s.at(len(planTiers())-1) }

// tierAt returns the measured cost of tier i of planTiers, nil when
// missing: Tiers holds one per plan tier, in that order.
func (c *PlanCosts) tierAt(i int) *PlanTierCost {
	if i < len(c.Tiers) && c.Tiers[i].Measured {
		return &c.Tiers[i]
	}
	return nil
}

// Predict returns the predicted KV-load time and TTFT of a request of
// input tokens served served tokens by each plan tier (recompute: the
// tokens after the hit). From a sweep, load is the sum of one fetch per
// tier that served tokens and has a cost (never below 0), and TTFT adds
// the prefill of the recomputed positions; TTFT is NaN when a tier that served tokens
// has no cost. From a probe, load is NaN (HTTP TTFT does not separate it)
// and TTFT mixes the tiers' TTFT at the hit length by their share of the
// hit, plus the miss TTFT's growth from the hit length to the input.
// Past ExtrapolationLimit both are NaN (PastLimit).
func (c *PlanCosts) Predict(served Served, input int64) (load, ttft float64) {
	if c.PastLimit(served, input) {
		return math.NaN(), math.NaN()
	}
	ts := planTiers()
	missing := false
	for i := range ts {
		if served.at(i) > 0 && c.tierAt(i) == nil {
			missing = true
		}
	}
	if c.probe {
		if missing {
			return math.NaN(), math.NaN()
		}
		return math.NaN(), c.probeTTFT(served, input)
	}
	for i := range capacityTiers() {
		if n, tc := served.at(i), c.tierAt(i); n > 0 && tc != nil {
			// A fit's negative intercept would make a short fetch cost
			// less than nothing.
			f := tc.Fit
			load += max(0, f.Alpha+float64(n)*f.BlockBytes/float64(f.BlockTokens)/f.Rate)
		}
	}
	if missing {
		return load, math.NaN()
	}
	ttft = load
	if n := served.at(len(ts) - 1); n > 0 {
		f := c.tierAt(len(ts) - 1).Fit
		ttft += max(0, f.Alpha+(f.Flops(input)-f.Flops(input-n))/f.Rate)
	}
	return load, ttft
}

func (c *PlanCosts) probeTTFT(served Served, input int64) float64 {
	miss := c.tierAt(len(planTiers()) - 1).Growth
	hit := served.hit(input)
	ttft := miss.At(float64(input))
	if hit == 0 {
		return ttft
	}
	ttft -= miss.At(float64(hit))
	for i := range capacityTiers() {
		if n := served.at(i); n > 0 {
			ttft += float64(n) / float64(hit) * c.tierAt(i).Growth.At(float64(hit))
		}
	}
	return ttft
}

// WhatToRun says how to measure costs a plan can fit.
const WhatToRun = "run kvtier probe --prefix at lengths covering the trace's (e.g. --prefix 4k,16k,32k,64k), or kvtier plan --sim"

// ExtrapolationLimit is how far past the longest prefix length a cost
// was measured at the plan reads it: up to this multiple, along the form
// the fit has (prefill's C + A·L + B·L², a fetch's α + bytes/rate);
// past it a request is counted, not predicted.
const ExtrapolationLimit = 2.0

// reach returns how far the prediction for a request of input tokens
// served served tokens by each tier reads its costs, as a multiple of
// the longest prefix each was measured at: above 1 is extrapolated. A
// sweep's fetch moves the tier's tokens; the recompute of the tail
// attends to the whole input; a probe's hit TTFT is read at the hit
// length.
func (c *PlanCosts) reach(served Served, input int64) float64 {
	ts := planTiers()
	r := 0.0
	for i := range ts {
		n, tc := served.at(i), c.tierAt(i)
		if n <= 0 || tc == nil {
			continue
		}
		L := float64(n)
		switch {
		case i == len(ts)-1:
			L = float64(input)
		case c.probe:
			L = float64(served.hit(input))
		}
		r = max(r, L/tc.MaxL())
	}
	return r
}

// Extrapolated reports whether the prediction for a request of input
// tokens served served tokens by each tier reads a cost past the
// longest prefix it was measured at: a fetch of more tokens than the
// tier's sweep moved, a recompute or a probe TTFT at a longer L.
func (c *PlanCosts) Extrapolated(served Served, input int64) bool {
	return c.reach(served, input) > 1
}

// PastLimit reports whether that prediction would read a cost past
// ExtrapolationLimit times the longest prefix it was measured at:
// Predict gives no figure for it.
func (c *PlanCosts) PastLimit(served Served, input int64) bool {
	return c.reach(served, input) > ExtrapolationLimit
}

// pointLengths lists the prefix lengths of a probe tier's points.
func pointLengths(pts [][2]float64) string {
	var ls []string
	for _, p := range pts {
		ls = append(ls, units.FormatTokens(int64(p[0])))
	}
	return strings.Join(ls, ", ")
}

// growthOf fits a probe tier's TTFT points; with fewer than two
// lengths there is no fit, and no cost.
func growthOf(pts [][2]float64) (*Growth, error) {
	ls, ys := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		ls[i], ys[i] = p[0], p[1]
	}
	g, err := FitGrowth(ls, ys)
	if err != nil {
		return nil, fmt.Errorf("no fit: %w", err)
	}
	return &g, nil
}
