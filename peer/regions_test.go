package peer

import (
	"slices"
	"testing"
)

// TestRegionSet: written regions are kept sorted and merged where they
// overlap or touch, chunks outside the pool are left out, and past
// maxRegions the set becomes one span from the first to the last.
func TestRegionSet(t *testing.T) {
	span := func(off, n int64) Chunk { return Chunk{Src: off, Len: n} }
	for _, tc := range []struct {
		name string
		add  []Chunk
		want []Chunk
	}{
		{"apart", []Chunk{span(100, 10), span(0, 10)}, []Chunk{span(0, 10), span(100, 10)}},
		{"touching", []Chunk{span(0, 10), span(10, 5)}, []Chunk{span(0, 15)}},
		{"bridging", []Chunk{span(0, 10), span(20, 10), span(40, 10), span(5, 20)}, []Chunk{span(0, 30), span(40, 10)}},
		{"inside", []Chunk{span(0, 100), span(10, 5)}, []Chunk{span(0, 100)}},
		{"outside the pool", []Chunk{span(1000, 1), span(990, 20), span(-5, 10), span(3, 0)}, nil},
	} {
		var s regionSet
		s.add(tc.add, 1000)
		if !slices.Equal(s.r, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, s.r, tc.want)
		}
	}
	var s regionSet
	for i := range int64(maxRegions + 1) {
		s.add([]Chunk{span(10*i, 1)}, 1<<40)
	}
	if want := []Chunk{span(0, 10*maxRegions+1)}; !slices.Equal(s.r, want) || s.bytes() != want[0].Len {
		t.Errorf("past maxRegions: %d regions, first %v", len(s.r), s.r[0])
	}
}
