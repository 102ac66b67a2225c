package workload

import "math"

// A group is one sub-sample of the blocks with everything kept per block:
// the whole trace in an exact analysis, one of shardsGroups
// hash-partitioned sub-samples under SHARDS. Under SHARDS every group
// also holds the blocks tracked exactly (those that open a request), each
// weighted by the group's rate so that it counts as one block and its
// tokens once, where a sampled block stands for 1/rate of them.
type group struct {
	ids    blockIndex  // hash id -> dense block
	exact  int         // blocks of ids tracked exactly
	unit   int64       // stack weight of a sampled block (1: exact analysis)
	exactW int64       // stack weight of a block tracked exactly: rate·unit
	stacks [][]*stack  // per instance count, per instance
	hist   [][]float64 // per instance count: tokens by leading distance (sampled units)

	sampled float64 // tokens of the group's block references (sampled units)
	// The ceiling: tokens in the leading run of blocks seen before, by
	// any session and by the same session; the any-session hits split
	// into intra-session and, per block, cross-session.
	anyHit, intraCeil, intraHit float64
	refs                        sessionSets // the sessions of the group's sampled blocks
	windows                     []*window

	// The current request's blocks in this group.
	pos    []int     // position in the request
	tokens []int     // tokens of the block
	weight []int64   // stack weight of the block: unit or exactW
	wtok   []float64 // tokens in sampled units: tokens·weight/unit
	idx    []int32   // dense block, -1 when never seen before
	dist   []int64   // stack distance in the instance's cache, in sampled blocks (rounded down)
	lead   []int64   // running maximum of dist
}

// sampledUnit is the stack weight of a sampled block under SHARDS: a
// block tracked exactly weighs rate·sampledUnit.
const sampledUnit = 1 << 20

func newGroup(o AnalyzeOptions, rate float64) *group {
	g := &group{refs: newSessionSets(), unit: 1, exactW: 1}
	if rate < 1 {
		g.unit = sampledUnit
		g.exactW = max(1, int64(math.Round(rate*sampledUnit)))
	}
	for _, n := range o.Instances {
		ss := make([]*stack, n)
		for i := range ss {
			ss[i] = &stack{}
		}
		g.stacks = append(g.stacks, ss)
		g.hist = append(g.hist, nil)
	}
	for _, w := range o.Windows {
		g.windows = append(g.windows, &window{w: w})
		g.stacks[0][0].horizon = max(g.stacks[0][0].horizon, w)
	}
	return g
}

// collect gathers the request's blocks at positions (those of the
// group, in order; member says per block whether it is tracked exactly)
// and looks each up: all of them before any is touched.
func (g *group) collect(r *Request, positions []int32, member []int) {
	g.pos, g.tokens, g.idx = g.pos[:0], g.tokens[:0], g.idx[:0]
	g.weight, g.wtok = g.weight[:0], g.wtok[:0]
	for _, k32 := range positions {
		k := int(k32)
		w := g.unit
		if member[k] == memberExact {
			w = g.exactW
		}
		t := r.BlockTokensAt(k)
		wt := float64(t) * float64(w) / float64(g.unit)
		g.pos = append(g.pos, k)
		g.tokens = append(g.tokens, t)
		g.weight = append(g.weight, w)
		g.wtok = append(g.wtok, wt)
		g.sampled += wt
		b, seen := g.ids.get(r.Hashes[k])
		if !seen {
			b = -1
		}
		g.idx = append(g.idx, b)
	}
}

// ceiling adds the request's blocks to the infinite-cache figures: the
// leading run of blocks seen before by anyone, split by whether the same
// session saw them, and the leading run of blocks its session saw. x,
// under SHARDS, says which of the request's blocks are tracked exactly
// and whether the session saw them; nil in an exact analysis.
func (g *group) ceiling(session int, sessioned bool, x *exactBlocks) {
	intraRun := sessioned
	for i, b := range g.idx {
		if b < 0 {
			break
		}
		t := g.wtok[i]
		g.anyHit += t
		if !sessioned {
			continue
		}
		refs, mine := &g.refs, false
		if xb := x.at(g.pos[i]); xb >= 0 {
			refs, b, mine = &x.sets, xb, x.mine[g.pos[i]]
		} else {
			mine = g.refs.referenced(session, b)
		}
		if mine {
			g.intraHit += t
		} else {
			refs.crossHit[b] += t
		}
		intraRun = intraRun && mine
		if intraRun {
			g.intraCeil += t
		}
	}
}

// lookup computes the stack distances of the request's blocks in instance
// inst of instance count ni and adds each block's tokens to the histogram
// at its leading distance.
func (g *group) lookup(ni, inst int) {
	s := g.stacks[ni][inst]
	g.dist, g.lead = g.dist[:0], g.lead[:0]
	lead := int64(0)
	for i, b := range g.idx {
		d := int64(Inf)
		if b >= 0 {
			if above := s.above(b); above != Inf {
				// The blocks above b, plus b itself: one block.
				d = (above + g.exactW) / g.unit
			}
		}
		lead = max(lead, d)
		g.dist = append(g.dist, d)
		g.lead = append(g.lead, lead)
		if lead == Inf {
			continue
		}
		h := g.hist[ni]
		for int64(len(h)) <= lead {
			h = append(h, 0)
		}
		h[lead] += g.wtok[i]
		g.hist[ni] = h
	}
}

// touch makes the request's blocks the most recently used in every cache
// it went to and records them in the session and window sets.
func (g *group) touch(r *Request, o AnalyzeOptions, sessioned bool, x *exactBlocks, instance func(ni int) int) {
	for i, b := range g.idx {
		if b >= 0 {
			continue
		}
		h := r.Hashes[g.pos[i]]
		if b2, ok := g.ids.get(h); ok { // a repeat within the request
			g.idx[i] = b2
			continue
		}
		g.idx[i] = g.ids.add(h)
		g.refs.grow(g.ids.len())
		if g.weight[i] != g.unit {
			g.exact++
		}
	}
	for ni := range g.stacks {
		s := g.stacks[ni][instance(ni)]
		s.now = r.Time
		for j := range g.idx {
			if o.Touch == TouchReverse {
				j = len(g.idx) - 1 - j
			}
			s.touchWeighted(g.idx[j], g.weight[j])
		}
	}
	if sessioned {
		for i, b := range g.idx {
			if x.at(g.pos[i]) < 0 {
				g.refs.add(r.Session, b)
			}
		}
	}
}
