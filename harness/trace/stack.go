package trace

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
type stack struct {
	last  []int32 // per block: its slot, -1 before its first reference
	owner []int32 // per slot: the block whose last reference it is, or -1
	tree  []int32 // Fenwick tree over slots (1-based inside)
	stamp []int64 // per slot: the reference count when it was taken
	next  int32   // the next free slot
	live  int     // distinct blocks referenced so far
	clock int64   // references so far
}

const minSlots = 1024

// distance returns the LRU stack distance of block b: the smallest number
// of blocks an LRU cache must hold to have b, or Inf when b has never been
// referenced.
func (s *stack) distance(b int32) int64 {
	if int(b) >= len(s.last) || s.last[b] < 0 {
		return Inf
	}
	return int64(s.live - s.prefix(s.last[b]) + 1)
}

// touch makes block b the most recently used.
func (s *stack) touch(b int32) {
	for int(b) >= len(s.last) {
		s.last = append(s.last, -1)
	}
	if old := s.last[b]; old >= 0 {
		s.add(old, -1)
		s.owner[old] = -1
	} else {
		s.live++
	}
	if int(s.next) >= len(s.owner) {
		s.compact()
	}
	slot := s.next
	s.next++
	s.owner[slot] = b
	s.stamp[slot] = s.clock
	s.clock++
	s.last[b] = slot
	s.add(slot, 1)
}

// since returns the number of distinct blocks referenced at or after
// reference number ref: the top of the stack down to the first slot
// stamped ref or later.
func (s *stack) since(ref int64) int {
	first, _ := slices.BinarySearch(s.stamp[:s.next], ref)
	if first == 0 {
		return s.live
	}
	return s.live - s.prefix(int32(first-1))
}

// prefix returns the number of live slots at or before slot i.
func (s *stack) prefix(i int32) int {
	n := 0
	for j := i + 1; j > 0; j -= j & -j {
		n += int(s.tree[j])
	}
	return n
}

func (s *stack) add(i, v int32) {
	for j := i + 1; int(j) < len(s.tree); j += j & -j {
		s.tree[j] += v
	}
}

// compact renumbers the live slots 0..live-1 in order into a clock of
// twice as many slots and rebuilds the tree in linear time.
func (s *stack) compact() {
	size := max(2*s.live+2, minSlots)
	if size > math.MaxInt32-1 {
		panic("trace: more than 1e9 distinct blocks in one LRU stack; use sampling")
	}
	owner := make([]int32, size)
	for i := range owner {
		owner[i] = -1
	}
	stamp := make([]int64, size)
	n := int32(0)
	for i, b := range s.owner[:s.next] {
		if b >= 0 {
			owner[n], stamp[n] = b, s.stamp[i]
			s.last[b] = n
			n++
		}
	}
	s.owner, s.stamp, s.next = owner, stamp, n
	s.tree = make([]int32, size+1)
	for i := int32(0); i < n; i++ {
		s.tree[i+1]++
	}
	for j := 1; j <= size; j++ {
		if p := j + j&-j; p <= size {
			s.tree[p] += s.tree[j]
		}
	}
}
