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
	crossHit                    map[int32]float64
	// The sessions that referenced each block: how many, the first of
	// them, and, for a block two or more referenced, every (session,
	// block) pair in pairs (session<<32 | block). Most blocks belong to
	// one session, so pairs holds the shared ones only.
	sessions  []int32
	firstSess []int32
	pairs     map[uint64]struct{}
	windows   []*window

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
	g := &group{crossHit: map[int32]float64{}, pairs: map[uint64]struct{}{}, unit: 1, exactW: 1}
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
	}
	return g
}

// collect gathers the request's blocks that belong to group gi (member
// says, per block, its group, memberExact or memberNone) and looks each
// up: all of them before any is touched.
func (g *group) collect(r *Request, member []int, gi int) {
	g.pos, g.tokens, g.idx = g.pos[:0], g.tokens[:0], g.idx[:0]
	g.weight, g.wtok = g.weight[:0], g.wtok[:0]
	for k, h := range r.Hashes {
		w := g.unit
		switch member[k] {
		case gi:
		case memberExact:
			w = g.exactW
		default:
			continue
		}
		t := r.BlockTokensAt(k)
		wt := float64(t) * float64(w) / float64(g.unit)
		g.pos = append(g.pos, k)
		g.tokens = append(g.tokens, t)
		g.weight = append(g.weight, w)
		g.wtok = append(g.wtok, wt)
		g.sampled += wt
		b, seen := g.ids.get(h)
		if !seen {
			b = -1
		}
		g.idx = append(g.idx, b)
	}
}

// ceiling adds the request's blocks to the infinite-cache figures: the
// leading run of blocks seen before by anyone, split by whether the same
// session saw them, and the leading run of blocks its session saw.
func (g *group) ceiling(session int, sessioned bool) {
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
		mine := g.referenced(session, b)
		if mine {
			g.intraHit += t
		} else {
			g.crossHit[b] += t
		}
		intraRun = intraRun && mine
		if intraRun {
			g.intraCeil += t
		}
	}
}

func pairKey(session int, b int32) uint64 { return uint64(session)<<32 | uint64(uint32(b)) }

// referenced reports whether session referenced block b before.
func (g *group) referenced(session int, b int32) bool {
	if g.sessions[b] == 1 {
		return g.firstSess[b] == int32(session)
	}
	_, ok := g.pairs[pairKey(session, b)]
	return ok
}

// addSession records that session referenced block b.
func (g *group) addSession(session int, b int32) {
	switch n := g.sessions[b]; {
	case n == 0:
		g.sessions[b], g.firstSess[b] = 1, int32(session)
	case n == 1 && g.firstSess[b] == int32(session):
	case n == 1:
		g.pairs[pairKey(int(g.firstSess[b]), b)] = struct{}{}
		g.pairs[pairKey(session, b)] = struct{}{}
		g.sessions[b] = 2
	default:
		if _, ok := g.pairs[pairKey(session, b)]; !ok {
			g.pairs[pairKey(session, b)] = struct{}{}
			g.sessions[b]++
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
func (g *group) touch(r *Request, o AnalyzeOptions, sessioned bool, instance func(ni int) int) {
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
		g.sessions = append(g.sessions, 0)
		g.firstSess = append(g.firstSess, 0)
		if g.weight[i] != g.unit {
			g.exact++
		}
	}
	for _, w := range g.windows {
		w.arrive(r.Time, g.stacks[0][0].clock)
	}
	for ni := range g.stacks {
		s := g.stacks[ni][instance(ni)]
		for j := range g.idx {
			if o.Touch == TouchReverse {
				j = len(g.idx) - 1 - j
			}
			s.touchWeighted(g.idx[j], g.weight[j])
		}
	}
	if sessioned {
		for _, b := range g.idx {
			g.addSession(r.Session, b)
		}
	}
}
