package workload

import (
	"math"
	"slices"
)

// Inf is the stack distance of a block never referenced before: no cache
// of any size holds it.
const Inf = math.MaxInt64

// A stack is an LRU stack of blocks that answers stack distances in
// O(log n): every reference takes the next slot of a clock, a Fenwick
// tree counts the slots that are some block's most recent reference, and
// the distance of block b is one plus the number of such slots after b's.
// When the clock runs out of slots the live ones are renumbered in order
// (compaction), so the tree stays within 1.5 times the number of distinct
// blocks whatever the length of the trace.
//
// Blocks are dense indices (0, 1, 2, ...) handed out by the caller.
//
// Each reference carries a weight, the number of blocks it stands for (1
// in an exact analysis): distances and counts are sums of the weights of
// the blocks' latest references, so one stack mixes blocks sampled at
// different rates.
type stack struct {
	last  []int32   // per block: its slot, -1 before its first reference
	owner []int32   // per slot: the block whose last reference it is, or -1
	tree  []int64   // Fenwick tree of weights over slots (1-based inside)
	when  []float64 // per slot: the arrival of the request that took it
	// weight is per slot the weight of its reference; nil while every
	// weight has been 1 (an exact analysis), which saves its memory.
	weight []int64
	next   int32   // the next free slot
	live   int64   // weight of the distinct blocks referenced so far
	now    float64 // the arrival of the request whose blocks are touched
	// compactions counts the compactions, which renumber the slots.
	compactions int
}

const minSlots = 1024

// distance returns the LRU stack distance of block b: the smallest number
// of blocks (weights) an LRU cache must hold to have b, or Inf when b has
// never been referenced.
func (s *stack) distance(b int32) int64 {
	if int(b) >= len(s.last) || s.last[b] < 0 {
		return Inf
	}
	slot := s.last[b]
	return s.live - s.prefix(slot) + s.weightAt(slot)
}

// weightAt returns the weight of slot i's reference.
func (s *stack) weightAt(i int32) int64 {
	if s.weight == nil {
		return 1
	}
	return s.weight[i]
}

// above returns the weight of the distinct blocks referenced since block
// b's last reference, or Inf when b has never been referenced.
func (s *stack) above(b int32) int64 {
	if int(b) >= len(s.last) || s.last[b] < 0 {
		return Inf
	}
	return s.live - s.prefix(s.last[b])
}

// touch makes block b the most recently used, with weight 1.
func (s *stack) touch(b int32) { s.touchWeighted(b, 1) }

// touchWeighted makes block b the most recently used, standing for w
// blocks.
func (s *stack) touchWeighted(b int32, w int64) {
	for int(b) >= len(s.last) {
		s.last = append(s.last, -1)
	}
	if w != 1 && s.weight == nil {
		s.weight = make([]int64, len(s.owner))
		for i := range s.weight {
			s.weight[i] = 1
		}
	}
	if old := s.last[b]; old >= 0 {
		ow := s.weightAt(old)
		s.add(old, -ow)
		s.live -= ow
		s.owner[old] = -1
	}
	if int(s.next) >= len(s.owner) {
		s.compact()
	}
	slot := s.next
	s.next++
	s.owner[slot] = b
	s.when[slot] = s.now
	if s.weight != nil {
		s.weight[slot] = w
	}
	s.last[b] = slot
	s.live += w
	s.add(slot, w)
}

// since returns the number (weight) of distinct blocks referenced by
// requests that arrived at t or later: the top of the stack down to the
// first slot taken at t or later.
func (s *stack) since(t float64) int64 { return s.fromSlot(s.firstSince(t)) }

// firstSince returns the first slot taken at t or later (s.next when
// none).
func (s *stack) firstSince(t float64) int32 {
	first, _ := slices.BinarySearch(s.when[:s.next], t)
	return int32(first)
}

// fromSlot returns the weight of the live slots from slot first on.
func (s *stack) fromSlot(first int32) int64 {
	if first == 0 {
		return s.live
	}
	return s.live - s.prefix(first-1)
}

// prefix returns the weight of the live slots at or before slot i.
func (s *stack) prefix(i int32) int64 {
	n := int64(0)
	for j := i + 1; j > 0; j -= j & -j {
		n += s.tree[j]
	}
	return n
}

func (s *stack) add(i int32, v int64) {
	for j := i + 1; int(j) < len(s.tree); j += j & -j {
		s.tree[j] += v
	}
}

// compact renumbers the live slots 0..n-1 in order, in place, and
// rebuilds the tree in linear time. The clock grows to one and a half
// times the live slots when fewer than a quarter as many would be free,
// so compaction costs O(1) per reference (a linear pass every n/4
// references or more) and the slots stay within 1.5 times the distinct
// blocks.
func (s *stack) compact() {
	n := int32(0)
	for i, b := range s.owner[:s.next] {
		if b >= 0 {
			s.owner[n], s.when[n] = b, s.when[i]
			if s.weight != nil {
				s.weight[n] = s.weight[i]
			}
			s.last[b] = n
			n++
		}
	}
	if size := len(s.owner); size < int(n)+max(int(n)/4, minSlots) {
		size = int(n) + max(int(n)/2, minSlots)
		if size > math.MaxInt32-1 {
			panic("trace: more than 1e9 distinct blocks in one LRU stack; use sampling")
		}
		s.owner = grown(s.owner[:n], size)
		s.when = grown(s.when[:n], size)
		if s.weight != nil {
			s.weight = grown(s.weight[:n], size)
		}
		s.tree = make([]int64, size+1)
	}
	for i := n; int(i) < len(s.owner); i++ {
		s.owner[i] = -1
	}
	s.next = n
	s.compactions++
	clear(s.tree)
	for i := int32(0); i < n; i++ {
		s.tree[i+1] = s.weightAt(i)
	}
	size := len(s.owner)
	for j := 1; j <= size; j++ {
		if p := j + j&-j; p <= size {
			s.tree[p] += s.tree[j]
		}
	}
}

// grown returns xs in a new slice of length size.
func grown[T any](xs []T, size int) []T {
	out := make([]T, size)
	copy(out, xs)
	return out
}
