package workload

// sessionSets records, per dense block, the sessions that referenced it
// and the tokens of its cross-session hits: one int32 per block, which
// says the block's only session or, for a block two or more sessions
// referenced (few: system prompts, forks), where its count is. Each
// session of a shared block lists it (a short slice per session, the
// first maxListed such blocks) and pairs holds the rest (session<<32 |
// block).
type sessionSets struct {
	// owner is per block 0 before any session referenced it, s+1 when
	// session s alone did, and −(i+1) when two or more did, counts[i]
	// of them.
	owner    []int32
	counts   []int32
	listed   [][]int32 // per session: shared blocks it referenced, up to maxListed
	pairs    map[uint64]struct{}
	crossHit map[int32]float64 // per block: tokens of its cross-session hits (sampled units)
}

// maxListed bounds a session's list of shared blocks: a lookup scans it.
const maxListed = 16

func newSessionSets() sessionSets {
	return sessionSets{pairs: map[uint64]struct{}{}, crossHit: map[int32]float64{}}
}

// grow makes room for blocks up to n−1.
func (s *sessionSets) grow(n int) {
	for len(s.owner) < n {
		s.owner = append(s.owner, 0)
	}
}

func pairKey(session int, b int32) uint64 { return uint64(session)<<32 | uint64(uint32(b)) }

// count returns the number of sessions that referenced block b.
func (s *sessionSets) count(b int32) int {
	switch o := s.owner[b]; {
	case o == 0:
		return 0
	case o > 0:
		return 1
	default:
		return int(s.counts[-o-1])
	}
}

// referenced reports whether session referenced block b before.
func (s *sessionSets) referenced(session int, b int32) bool {
	switch o := s.owner[b]; {
	case o == 0:
		return false
	case o > 0:
		return o == int32(session)+1
	}
	return s.has(session, b)
}

// has reports whether session is one of shared block b's sessions.
func (s *sessionSets) has(session int, b int32) bool {
	if session >= len(s.listed) {
		return false
	}
	l := s.listed[session]
	for _, x := range l {
		if x == b {
			return true
		}
	}
	if len(l) < maxListed {
		return false
	}
	_, ok := s.pairs[pairKey(session, b)]
	return ok
}

// note records that session referenced shared block b.
func (s *sessionSets) note(session int, b int32) {
	for len(s.listed) <= session {
		s.listed = append(s.listed, nil)
	}
	if l := s.listed[session]; len(l) < maxListed {
		s.listed[session] = append(l, b)
		return
	}
	s.pairs[pairKey(session, b)] = struct{}{}
}

// add records that session referenced block b.
func (s *sessionSets) add(session int, b int32) {
	switch o := s.owner[b]; {
	case o == 0:
		s.owner[b] = int32(session) + 1
	case o == int32(session)+1:
	case o > 0:
		s.note(int(o-1), b)
		s.note(session, b)
		s.counts = append(s.counts, 2)
		s.owner[b] = -int32(len(s.counts))
	default:
		if !s.has(session, b) {
			s.note(session, b)
			s.counts[-o-1]++
		}
	}
}

// shared returns the cross-session hit tokens of the blocks at least
// min sessions referenced.
func (s *sessionSets) shared(min int) float64 {
	t := 0.0
	for b, hit := range s.crossHit {
		if s.count(b) >= min {
			t += hit
		}
	}
	return t
}

// exactBlocks are, under SHARDS, the blocks tracked exactly (those that
// opened a request), which every group holds: their sessions are
// recorded once here rather than in every group.
type exactBlocks struct {
	ids blockIndex
	// filter has a bit set for every id in ids (by the low bits of its
	// mix), so most ids that are not are told without a lookup.
	filter [1 << 10]uint64
	sets   sessionSets
	// Per position of the current request: the block's index in ids (-1
	// for a sampled block) and whether its session referenced it before.
	idx  []int32
	mine []bool
}

// start begins a request.
func (x *exactBlocks) start() { x.idx, x.mine = x.idx[:0], x.mine[:0] }

// classify notes the request's next block, hash id h, and reports
// whether it is tracked exactly: it opens the request (the request's
// first block) or opened an earlier one. Whether the session saw it
// before is looked up now, before any block of the request is recorded.
func (x *exactBlocks) classify(h, mixed uint64, opens bool, session int) bool {
	bit := mixed % (64 * uint64(len(x.filter)))
	if !opens && x.filter[bit/64]&(1<<(bit%64)) == 0 {
		x.idx = append(x.idx, -1)
		x.mine = append(x.mine, false)
		return false
	}
	b, seen := x.ids.get(h)
	mine := seen && x.sets.referenced(session, b)
	switch {
	case !seen && opens:
		x.filter[bit/64] |= 1 << (bit % 64)
		b = x.ids.add(h)
		x.sets.grow(x.ids.len())
	case !seen:
		b = -1
	}
	x.idx = append(x.idx, b)
	x.mine = append(x.mine, mine)
	return b >= 0
}

// record adds the request's exact blocks to their sessions: those its
// session had not referenced before.
func (x *exactBlocks) record(session int) {
	for k, b := range x.idx {
		if b >= 0 && !x.mine[k] {
			x.sets.add(session, b)
		}
	}
}

// at returns the exact index of the request's block k, -1 when it is
// sampled or x is nil (an exact analysis).
func (x *exactBlocks) at(k int) int32 {
	if x == nil {
		return -1
	}
	return x.idx[k]
}
