package workload

import (
	"math"
	"math/bits"
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
// different rates. While every weight is 1 the stack counts its live
// slots in a bit set instead (liveSet), which holds a tree 64 times
// smaller.
type stack struct {
	last  []int32 // per block: its slot, -1 before its first reference
	owner []int32 // per slot: the block whose last reference it is, or -1
	// The live slots: a bit set while every weight has been 1, then a
	// Fenwick tree of weights over slots (1-based inside).
	set    liveSet
	tree64 fenwick[int64]
	// weight is per slot the weight of its reference; nil while every
	// weight has been 1 (an exact analysis), which saves its memory.
	weight []int64
	next   int32   // the next free slot
	live   int64   // weight of the distinct blocks referenced so far
	now    float64 // the arrival of the request whose blocks are touched
	// horizon is how far back in time windows look: the first slot
	// taken at each arrival is marked for that long; 0 marks nothing.
	horizon float64
	marks   []mark // ascending in time and slot
	dropped int    // marks forgotten before marks[0] since the last compaction
	// compactions counts the compactions, which renumber the slots and
	// merge the marks that come to name one slot.
	compactions int
}

// A mark is the first slot taken at an arrival time.
type mark struct {
	t    float64
	slot int32
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
		s.weigh()
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
	s.mark()
	slot := s.next
	s.next++
	s.owner[slot] = b
	if s.weight != nil {
		s.weight[slot] = w
	}
	s.last[b] = slot
	s.live += w
	s.add(slot, w)
}

// weigh keeps a weight per slot and counts the tree in 64 bits, from the
// first reference whose weight is not 1.
func (s *stack) weigh() {
	s.weight = make([]int64, len(s.owner))
	for i := range s.weight {
		s.weight[i] = 1
	}
	s.tree64 = make(fenwick[int64], len(s.owner)+1)
	s.tree64.build(s.next, func(i int32) int64 { return min(int64(s.owner[i])+1, 1) })
	s.set = liveSet{}
}

// mark notes the next slot as the first taken at s.now, when it is, and
// forgets the marks older than the horizon.
func (s *stack) mark() {
	if s.horizon == 0 || (len(s.marks) > 0 && s.marks[len(s.marks)-1].t == s.now) {
		return
	}
	old := 0
	for old < len(s.marks) && s.marks[old].t < s.now-s.horizon {
		old++
	}
	s.dropped += old
	s.marks = append(s.marks[old:], mark{t: s.now, slot: s.next})
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
	if s.tree64 != nil {
		return s.tree64.prefix(i)
	}
	return s.set.prefix(i)
}

func (s *stack) add(i int32, v int64) {
	if s.tree64 != nil {
		s.tree64.add(i, v)
		return
	}
	s.set.add(i, v)
}

// compact renumbers the live slots 0..n-1 in order, in place, and
// rebuilds the tree in linear time. The clock grows to one and a half
// times the live slots when fewer than a quarter as many would be free,
// so compaction costs O(1) per reference (a linear pass every n/4
// references or more) and the slots stay within 1.5 times the distinct
// blocks.
func (s *stack) compact() {
	n, m, kept := int32(0), 0, 0
	for i, b := range s.owner[:s.next] {
		for ; m < len(s.marks) && s.marks[m].slot <= int32(i); m++ {
			kept = s.keepMark(kept, m, n)
		}
		if b >= 0 {
			s.owner[n] = b
			if s.weight != nil {
				s.weight[n] = s.weight[i]
			}
			s.last[b] = n
			n++
		}
	}
	for ; m < len(s.marks); m++ {
		kept = s.keepMark(kept, m, n)
	}
	s.marks, s.dropped = s.marks[:kept], 0
	s.compactions++
	if size := len(s.owner); size < int(n)+max(int(n)/4, minSlots) {
		s.resize(n, int(n)+max(int(n)/2, minSlots))
	}
	for i := n; int(i) < len(s.owner); i++ {
		s.owner[i] = -1
	}
	s.next = n
	if s.tree64 != nil {
		s.tree64.build(n, s.weightAt)
		return
	}
	s.set.build(n)
}

// keepMark moves mark m, whose first slot is now slot, to marks[kept]
// and returns the marks kept; of the marks that name one slot the last
// is kept, so there are no more marks than live slots.
func (s *stack) keepMark(kept, m int, slot int32) int {
	if kept > 0 && s.marks[kept-1].slot == slot {
		kept--
	}
	s.marks[kept] = mark{t: s.marks[m].t, slot: slot}
	return kept + 1
}

// resize gives the clock size slots, keeping the first n, the live ones.
func (s *stack) resize(n int32, size int) {
	if size > math.MaxInt32-1 {
		panic("trace: more than 1e9 distinct blocks in one LRU stack; use sampling")
	}
	s.owner = grown(s.owner[:n], size)
	if s.weight != nil {
		s.weight = grown(s.weight[:n], size)
	}
	if s.tree64 != nil {
		s.tree64 = make(fenwick[int64], size+1)
	} else {
		s.set.resize(size)
	}
}

// A fenwick is a Fenwick tree over slots, 1-based inside.
type fenwick[T int32 | int64] []T

// prefix returns the sum of slots 0..i.
func (f fenwick[T]) prefix(i int32) int64 {
	var n T
	for j := i + 1; j > 0; j -= j & -j {
		n += f[j]
	}
	return int64(n)
}

func (f fenwick[T]) add(i int32, v T) {
	for j := i + 1; int(j) < len(f); j += j & -j {
		f[j] += v
	}
}

// build sets slots 0..n−1 to their weights and the rest to 0, in linear
// time.
func (f fenwick[T]) build(n int32, weight func(int32) T) {
	clear(f)
	for i := int32(0); i < n; i++ {
		f[i+1] = weight(i)
	}
	size := len(f) - 1
	for j := 1; j <= size; j++ {
		if p := j + j&-j; p <= size {
			f[p] += f[j]
		}
	}
}

// A liveSet counts the live slots of a stack whose weights are all 1:
// a bit per slot, and a Fenwick tree of the bits set in each word of 64.
type liveSet struct {
	bits  []uint64
	words fenwick[int32]
}

// prefix returns the live slots at or before slot i.
func (l *liveSet) prefix(i int32) int64 {
	w := i >> 6
	return l.words.prefix(w-1) + int64(bits.OnesCount64(l.bits[w]<<(63-uint(i&63))))
}

// add makes slot i live (v = 1) or dead (v = −1).
func (l *liveSet) add(i int32, v int64) {
	if v > 0 {
		l.bits[i>>6] |= 1 << uint(i&63)
	} else {
		l.bits[i>>6] &^= 1 << uint(i&63)
	}
	l.words.add(i>>6, int32(v))
}

// resize makes room for size slots, none live.
func (l *liveSet) resize(size int) {
	l.bits = make([]uint64, (size+63)/64)
	l.words = make(fenwick[int32], len(l.bits)+1)
}

// build makes slots 0..n−1 live and the rest dead.
func (l *liveSet) build(n int32) {
	for w := range l.bits {
		switch left := int(n) - 64*w; {
		case left >= 64:
			l.bits[w] = math.MaxUint64
		case left > 0:
			l.bits[w] = 1<<uint(left) - 1
		default:
			l.bits[w] = 0
		}
	}
	l.words.build(int32(len(l.bits)), func(w int32) int32 { return int32(bits.OnesCount64(l.bits[w])) })
}

// grown returns xs in a new slice of length size.
func grown[T any](xs []T, size int) []T {
	out := make([]T, size)
	copy(out, xs)
	return out
}
