package workload

// A blockIndex maps hash ids to dense block numbers (0, 1, 2, ... in the
// order they are put). The traces kvtier reads number their hash ids
// densely from 0 (Mooncake, Alibaba, the generator), so an id below a few
// times the number of blocks put is found in a table indexed by the id,
// 4 bytes per id and no hashing; any other id goes to a map.
type blockIndex struct {
	dense []int32 // id -> block+1; 0: not put
	other map[uint64]int32
	n     int
}

// denseSlack bounds the table: ids below denseSlack times the blocks put
// (plus denseMin) are kept in it.
const (
	denseSlack = 4
	denseMin   = 1 << 16
)

// get returns the block of hash id h.
func (x *blockIndex) get(h uint64) (int32, bool) {
	if h < uint64(len(x.dense)) {
		b := x.dense[h]
		return b - 1, b != 0
	}
	b, ok := x.other[h]
	return b, ok
}

// add gives hash id h, not yet put, the next block number and returns it.
func (x *blockIndex) add(h uint64) int32 {
	b := int32(x.n)
	x.put(h, b)
	return b
}

// put maps id h, not yet put, to b.
func (x *blockIndex) put(h uint64, b int32) {
	x.n++
	if h >= uint64(len(x.dense)) && h < uint64(denseSlack*x.n+denseMin) {
		x.grow(h)
	}
	if h < uint64(len(x.dense)) {
		x.dense[h] = b + 1
		return
	}
	if x.other == nil {
		x.other = map[uint64]int32{}
	}
	x.other[h] = b
}

// grow makes the table cover id h, moving the ids the map held below its
// new length into it.
func (x *blockIndex) grow(h uint64) {
	size := max(2*uint64(len(x.dense)), h+1, denseMin)
	size = min(size, uint64(denseSlack*x.n+denseMin))
	x.dense = grown(x.dense, int(size))
	for id, b := range x.other {
		if id < size {
			x.dense[id] = b + 1
			delete(x.other, id)
		}
	}
}

// len returns the number of blocks put.
func (x *blockIndex) len() int { return x.n }
