package workload

import (
	"math"
	"slices"
)

// Hits are the LRU stack distances of one request's hashed blocks in one
// cache, all looked up at its arrival, before any of them is touched.
//
// Block k is in a cache of C blocks exactly when Dist[k] ≤ C (an LRU cache
// of C blocks holds the C most recently used distinct blocks). The hit is
// the leading run of blocks present, so block k is part of it exactly when
// every block 0..k is present: when Lead[k] = max(Dist[0..k]) ≤ C. The
// hit of a cache of C blocks is therefore the tokens of the blocks with
// Lead[k] ≤ C, and one histogram of tokens by Lead gives the hit of every
// capacity at once.
type Hits struct {
	Dist   []int64 // per block: its stack distance; Inf when never seen
	Lead   []int64 // per block: the largest Dist of blocks 0..k
	Tokens []int   // per block: the tokens it holds
	Input  int     // the request's input tokens (hashed or not)
}

func (h *Hits) fill(r *Request, g *group) {
	h.Dist = append(h.Dist[:0], g.dist...)
	h.Lead = append(h.Lead[:0], g.lead...)
	h.Tokens = append(h.Tokens[:0], g.tokens...)
	h.Input = r.Input
}

// HitTokens returns the tokens a cache of c blocks serves the request.
func (h *Hits) HitTokens(c int64) int {
	n := 0
	for k, l := range h.Lead {
		if l > c {
			break
		}
		n += h.Tokens[k]
	}
	return n
}

// A Curve is the prefix hit ratio of LRU caches over their capacity, for
// every capacity: one cache, or n instances of it behind a router.
type Curve struct {
	Instances int
	Route     Route // "" for one instance
	// Input is every input token of the trace; hit ratios are of it.
	Input float64
	// hashedShare is the share of input tokens the hash ids cover.
	hashedShare float64
	groups      []curveGroup
}

// curveGroup is one sub-sample's cumulative histogram.
type curveGroup struct {
	cum     []float64 // cum[d]: tokens whose leading distance is ≤ d (sampled units)
	sampled float64   // tokens of the sub-sample's block references
	rate    float64
}

func newCurveGroup(hist []float64, sampled float64, rate float64) curveGroup {
	cum := make([]float64, len(hist))
	var s float64
	for d, v := range hist {
		s += v
		cum[d] = s
	}
	return curveGroup{cum: cum, sampled: sampled, rate: rate}
}

// at returns the sub-sample's hit share of its tokens at c blocks.
func (g curveGroup) at(c int64) float64 {
	if g.sampled == 0 || len(g.cum) == 0 {
		return 0
	}
	d := int64(math.Floor(float64(c) * g.rate))
	if c >= Inf/2 || d >= int64(len(g.cum)) {
		d = int64(len(g.cum)) - 1
	}
	if d < 0 {
		return 0
	}
	return g.cum[d] / g.sampled
}

// HitRatio returns the share of input tokens a cache of c blocks per
// instance serves from its leading runs; Inf gives the ceiling.
func (c *Curve) HitRatio(blocks int64) float64 {
	hit, sampled := c.totals(blocks)
	if sampled == 0 {
		return 0
	}
	return hit / sampled * c.hashedShare
}

// totals returns the hit tokens of a cache of c blocks and the sampled
// tokens, summed over the sub-samples.
func (c *Curve) totals(blocks int64) (hit, sampled float64) {
	for _, g := range c.groups {
		hit += g.at(blocks) * g.sampled
		sampled += g.sampled
	}
	return hit, sampled
}

// HitTokens returns the input tokens a cache of c blocks per instance
// serves (an estimate under sampling).
func (c *Curve) HitTokens(blocks int64) float64 { return c.HitRatio(blocks) * c.Input }

// Ceiling returns the hit ratio of an infinite cache.
func (c *Curve) Ceiling() float64 { return c.HitRatio(Inf) }

// StdErr returns the standard error of HitRatio(c) under sampling, from
// the spread of the independent sub-samples; 0 for an exact curve.
//
// HitRatio is a ratio estimate, the sub-samples' hit tokens over their
// sampled tokens, so a sub-sample with more tokens (one holding a block
// every request references) weighs more. The error is that of the same
// ratio: the linearised variance Σ(y_g − r·x_g)² · K/(K−1) / (Σx_g)² over
// the K sub-samples' hit tokens y_g and sampled tokens x_g.
func (c *Curve) StdErr(blocks int64) float64 {
	k := len(c.groups)
	if k < 2 {
		return 0
	}
	hit, sampled := c.totals(blocks)
	if sampled == 0 {
		return 0
	}
	r := hit / sampled
	ss := 0.0
	for _, g := range c.groups {
		x := g.sampled
		d := g.at(blocks)*x - r*x
		ss += d * d
	}
	return math.Sqrt(ss*float64(k)/float64(k-1)) / sampled * c.hashedShare
}

// Band returns the half-width of the sampled curve's interval at blocks,
// in hit-ratio points: boundT standard errors (StdErr: the sub-samples'
// spread) plus its resolution, the most the curve rises over one slot
// of a sub-sample on either side of blocks. A sub-sample at rate R/8
// holds a capacity of c blocks as ⌊c·R/8⌋ slots of 8/R blocks each, so
// its estimate is of a capacity up to one slot away, a bias the spread
// of the sub-samples does not show: without it the interval held the
// exact curve at 82 to 85 % of the capacities of a Mooncake-shaped
// trace at rates 0.5 to 0.01, with it at 93 % or more
// (TestShardsOnAMooncakeShapedTrace, docs/capacity.md). 0 for an exact
// curve.
func (c *Curve) Band(blocks int64) float64 {
	if len(c.groups) < 2 {
		return 0
	}
	band := boundT * c.StdErr(blocks)
	slot := int64(math.Ceil(1 / c.groups[0].rate))
	if blocks >= Inf/2 || slot <= 1 {
		return band
	}
	h := c.HitRatio(blocks)
	up := c.HitRatio(blocks+slot) - h
	down := h - c.HitRatio(max(blocks-slot, 0))
	return band + max(math.Abs(up), math.Abs(down))
}

// Knee returns the smallest capacity in blocks per instance whose hit
// ratio reaches frac of the ceiling, and false when the ceiling is 0.
func (c *Curve) Knee(frac float64) (int64, bool) {
	ceil := c.Ceiling()
	if ceil <= 0 {
		return 0, false
	}
	goal := frac * ceil * (1 - 1e-12)
	lo, hi := int64(1), c.maxCapacity()
	for lo < hi {
		mid := lo + (hi-lo)/2
		if c.HitRatio(mid) >= goal {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, true
}

// maxCapacity is a capacity in blocks past which the curve is flat.
func (c *Curve) maxCapacity() int64 {
	m := int64(1)
	for _, g := range c.groups {
		if len(g.cum) > 0 {
			m = max(m, int64(math.Ceil(float64(len(g.cum))/g.rate)))
		}
	}
	return m
}

// Steps returns the capacities in blocks where the curve rises, at most
// limit of them: every step when there are no more, else limit
// capacities spaced evenly on a log scale up to the last step.
func (c *Curve) Steps(limit int) []int64 {
	var steps []int64
	for _, g := range c.groups {
		prev := 0.0
		for d, v := range g.cum {
			if v != prev && d > 0 {
				steps = append(steps, int64(math.Ceil(float64(d)/g.rate)))
			}
			prev = v
		}
	}
	slices.Sort(steps)
	steps = slices.Compact(steps)
	if len(steps) <= limit || limit < 2 {
		return steps
	}
	top := float64(steps[len(steps)-1])
	grid := make([]int64, 0, limit)
	for i := range limit {
		grid = append(grid, int64(math.Round(math.Pow(top, float64(i)/float64(limit-1)))))
	}
	return slices.Compact(grid)
}
