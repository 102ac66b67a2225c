package peer

import (
	"slices"
	"sort"
)

// maxRegions bounds the regions a regionSet keeps apart. A session that
// writes more disjoint regions has them merged into one span from the
// first to the last, so a restore also fills the bytes between them
// with the pattern (what they hold unless another writer put something
// there at the same time).
const maxRegions = 1 << 16

// A regionSet is the regions of the pool a writable session wrote and
// has not committed: sorted by offset, disjoint, merged where they
// touch, each a Chunk of which Src and Len count.
type regionSet struct{ r []Chunk }

// add records that list was written; chunks outside a pool of size
// bytes are left out (no NIC or server would have written them).
func (s *regionSet) add(list []Chunk, size int64) {
	for _, ch := range list {
		if ch.Len > 0 && ch.Src >= 0 && ch.Src <= size-ch.Len {
			s.add1(ch.Src, ch.Src+ch.Len)
		}
	}
}

// add1 records the bytes [off, end).
func (s *regionSet) add1(off, end int64) {
	i := sort.Search(len(s.r), func(k int) bool { return s.r[k].Src+s.r[k].Len >= off })
	j := i
	for ; j < len(s.r) && s.r[j].Src <= end; j++ {
		off, end = min(off, s.r[j].Src), max(end, s.r[j].Src+s.r[j].Len)
	}
	s.r = slices.Replace(s.r, i, j, Chunk{Src: off, Len: end - off})
	if len(s.r) > maxRegions {
		last := s.r[len(s.r)-1]
		s.r = append(s.r[:0], Chunk{Src: s.r[0].Src, Len: last.Src + last.Len - s.r[0].Src})
	}
}

// bytes is how many bytes the set covers.
func (s *regionSet) bytes() int64 { return Bytes(s.r) }
