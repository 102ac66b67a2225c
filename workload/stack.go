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
// (compaction), so the tree stays within twice the number of distinct
// blocks whatever the length of the trace.
//
// Blocks are dense indices (0, 1, 2, ...) handed out by the caller.
//
// Each reference carries a weight, the number of blocks it stands for (1
// in an exact analysis): distances and counts are sums of the weights of
// the blocks' latest references, so one stack mixes blocks sampled at
// different rates.
type stack struct {
	last   []int32 // per block: its slot, -1 before its first reference
	owner  []int32 // per slot: the block whose last reference it is, or -1
	tree   []int64 // Fenwick tree of weights over slots (1-based inside)
	stamp  []int64 // per slot: the reference count when it was taken
	weight []int64 // per slot: the weight of its reference
	next   int32   // the next free slot
	live   int64   // weight of the distinct blocks referenced so far
	clock  int64   // references so far
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
	return s.live - s.prefix(slot) + s.weight[slot]
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
	if old := s.last[b]; old >= 0 {
		s.add(old, -s.weight[old])
		s.live -= s.weight[old]
		s.owner[old] = -1
	}
	if int(s.next) >= len(s.owner) {
		s.compact()
	}
	slot := s.next
	s.next++
	s.owner[slot] = b
	s.stamp[slot] = s.clock
	s.weight[slot] = w
	s.clock++
	s.last[b] = slot
	s.live += w
	s.add(slot, w)
}

// since returns the number (weight) of distinct blocks referenced at or
// after reference number ref: the top of the stack down to the first slot
// stamped ref or later.
func (s *stack) since(ref int64) int64 {
	first, _ := slices.BinarySearch(s.stamp[:s.next], ref)
	if first == 0 {
		return s.live
	}
	return s.live - s.prefix(int32(first-1))
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

// compact renumbers the live slots 0..live-1 in order into a clock of
// twice as many slots and rebuilds the tree in linear time.
func (s *stack) compact() {
	distinct := 0
	for _, b := range s.owner[:s.next] {
		if b >= 0 {
			distinct++
		}
	}
	size := max(2*distinct+2, minSlots)
	if size > math.MaxInt32-1 {
		panic("trace: more than 1e9 distinct blocks in one LRU stack; use sampling")
	}
	owner := make([]int32, size)
	for i := range owner {
		owner[i] = -1
	}
	stamp, weight := make([]int64, size), make([]int64, size)
	n := int32(0)
	for i, b := range s.owner[:s.next] {
		if b >= 0 {
			owner[n], stamp[n], weight[n] = b, s.stamp[i], s.weight[i]
			s.last[b] = n
			n++
		}
	}
	s.owner, s.stamp, s.weight, s.next = owner, stamp, weight, n
	s.tree = make([]int64, size+1)
	for i := int32(0); i < n; i++ {
		s.tree[i+1] = weight[i]
	}
	for j := 1; j <= size; j++ {
		if p := j + j&-j; p <= size {
			s.tree[p] += s.tree[j]
		}
	}
}
