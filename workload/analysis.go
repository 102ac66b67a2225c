package workload

import (
	"math"
	"slices"

	"github.com/kvtier/kvtier/results"
)

// Methods of an analysis.
const (
	MethodExact  = "exact"  // every block tracked
	MethodShards = "shards" // SHARDS spatial sampling (Waldspurger et al., FAST'15)
)

// An Analysis is what one pass over a trace found.
type Analysis struct {
	Requests      int
	Sessions      int
	SessionsKnown bool  // false: no session ids; every request was its own session
	BlockRefs     int64 // hash ids referenced
	Distinct      int64 // distinct hash ids (estimated under sampling)
	InputTokens   int64
	HashedTokens  int64   // input tokens covered by hash ids
	Span          float64 // seconds from the first request to the last

	Input, Output results.Stats // tokens per request
	Footprint     results.Stats // KV bytes of a request's input
	Think         results.Stats // seconds from the parent's arrival
	// TopSessionShare is the share of input tokens the top 1 % of
	// sessions (by input tokens) send; NaN where sessions are unknown.
	TopSessionShare float64

	// CeilingAny and CeilingIntra are the APC ceiling: the share of input
	// tokens in the leading run of blocks seen before, by any session and
	// by the same session. NaN where sessions are unknown.
	CeilingAny, CeilingIntra float64
	// Reuse splits the any-session ceiling's hit tokens (fractions of
	// them): intra-session, cross-session and shared prefix (a hash id at
	// least SharedSessions sessions referenced). NaN where sessions are
	// unknown.
	ReuseIntra, ReuseCross, ReuseShared float64
	SharedSessions                      int

	Curves  []*Curve // one per instance count, the single cache first
	Windows []WorkingSet

	Method     string  // MethodExact or MethodShards
	Sample     float64 // sampling rate, 1 when exact
	Touch      Touch
	BlockBytes int64     // KV bytes of one block of the trace's block size
	Knees      []float64 // the shares of the ceiling whose knees are reported, ascending
}

// A WorkingSet is the distinct KV referenced in a sliding window over time.
type WorkingSet struct {
	Window    float64       // seconds
	Points    []WindowPoint // one per tenth of the window: the largest in it
	PeakBytes float64
}

// ErrorBound returns the error bound of the sampled curve in hit-ratio
// points: the largest Curve.Band over the capacities of the curve's
// steps. It is 0 for an exact analysis.
func (a *Analysis) ErrorBound() float64 {
	if a.Method == MethodExact {
		return 0
	}
	worst := 0.0
	for _, c := range a.Curves {
		for _, cap := range append(c.Steps(512), Inf) {
			worst = max(worst, c.Band(cap))
		}
	}
	return worst
}

// boundT is Student's t at 97.5 % for shardsGroups−1 = 7 degrees of
// freedom: the spread of 8 sub-samples estimates the standard error
// loosely, and two standard errors would cover about 91 %.
const boundT = 2.365

// Finish returns the analysis of the requests added so far.
func (a *Analyzer) Finish(blockTokens int) *Analysis {
	res := &Analysis{
		Requests: a.requests, Sessions: len(a.sessionTokens), SessionsKnown: a.sessioned,
		BlockRefs: a.refs, InputTokens: a.input, HashedTokens: a.hashed, Span: a.last - a.first,
		Method: MethodExact, Sample: 1, Touch: a.o.Touch, SharedSessions: a.o.SharedSessions,
		Knees:      sortedKnees(a.o.Knees),
		BlockBytes: int64(blockTokens) * a.o.BytesPerToken,
	}
	if a.sampled {
		res.Method, res.Sample = MethodShards, a.rate()*shardsGroups
	}
	// Sorted in place, described through one buffer.
	slices.Sort(a.inputs)
	slices.Sort(a.outputs)
	buf := make([]float64, len(a.inputs))
	res.Input = describeInts(a.inputs, 1, buf)
	res.Output = describeInts(a.outputs, 1, buf)
	res.Footprint = describeInts(a.inputs, float64(a.o.BytesPerToken), buf)
	res.Think = describeSorting(a.thinks)
	res.TopSessionShare = nan
	if a.sessioned {
		res.TopSessionShare = topShare(a.sessionTokens, a.input)
	}
	sampled := 0.0
	for _, g := range a.groups {
		sampled += float64(g.ids.len() - g.exact)
	}
	res.Distinct = int64(math.Round(sampled/a.rate()/float64(len(a.groups)))) + int64(a.groups[0].exact)
	a.ceilings(res)
	for ni, n := range a.o.Instances {
		c := &Curve{Instances: n, Input: float64(a.input)}
		if n > 1 {
			c.Route = a.o.Route
		}
		if a.input > 0 {
			c.hashedShare = float64(a.hashed) / float64(a.input)
		}
		for _, g := range a.groups {
			c.groups = append(c.groups, newCurveGroup(g.hist[ni], g.sampled, a.rate()))
		}
		res.Curves = append(res.Curves, c)
	}
	for _, ws := range a.windows {
		w := WorkingSet{Window: ws.w, PeakBytes: ws.peak * float64(res.BlockBytes)}
		w.Points = slices.Clone(ws.points)
		res.Windows = append(res.Windows, w)
	}
	return res
}

// ceilings fills the APC ceilings and the reuse decomposition.
func (a *Analyzer) ceilings(res *Analysis) {
	var sampled, anyHit, intraCeil, intraHit, shared float64
	for _, g := range a.groups {
		sampled += g.sampled
		anyHit += g.anyHit
		intraCeil += g.intraCeil
		intraHit += g.intraHit
		shared += g.refs.shared(a.o.SharedSessions)
	}
	if a.exact != nil {
		shared += a.exact.sets.shared(a.o.SharedSessions)
	}
	share := 0.0
	if a.input > 0 && sampled > 0 {
		share = float64(a.hashed) / float64(a.input) / sampled
	}
	res.CeilingAny = anyHit * share
	res.CeilingIntra, res.ReuseIntra, res.ReuseCross, res.ReuseShared = nan, nan, nan, nan
	if !a.sessioned {
		return
	}
	res.CeilingIntra = intraCeil * share
	if anyHit > 0 {
		res.ReuseIntra = intraHit / anyHit
		res.ReuseShared = shared / anyHit
		res.ReuseCross = (anyHit - intraHit - shared) / anyHit
	}
}

// describeInts returns the statistics of sorted xs times scale (> 0),
// written into buf. An Analysis keeps no figure per request (8 MB per
// million requests each): the statistics come without their values.
func describeInts(xs []int32, scale float64, buf []float64) results.Stats {
	f := buf[:len(xs)]
	for i, x := range xs {
		f[i] = float64(x) * scale
	}
	st := results.DescribeSorted(f)
	st.Values = nil
	return st
}

// describeSorting returns the statistics of xs without their values,
// sorting xs in place rather than copying it.
func describeSorting(xs []float64) results.Stats {
	slices.Sort(xs) // NaN first, ±Inf at the ends
	var st results.Stats
	if n := len(xs); n > 0 && (math.IsNaN(xs[0]) || math.IsInf(xs[0], 0) || math.IsInf(xs[n-1], 0)) {
		st = results.Describe(xs) // leaves them out
	} else {
		st = results.DescribeSorted(xs)
	}
	st.Values = nil
	return st
}

// topShare returns the share of total held by the top 1 % of the values
// (at least one).
func topShare(by []int64, total int64) float64 {
	if total == 0 || len(by) == 0 {
		return nan
	}
	vs := slices.Clone(by)
	slices.Sort(vs)
	n := max(1, len(vs)/100)
	var top int64
	for _, v := range vs[len(vs)-n:] {
		top += v
	}
	return float64(top) / float64(total)
}
