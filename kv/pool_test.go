package kv

import "testing"

func TestContiguousSpanClamps(t *testing.T) {
	t.Parallel()
	c, err := ContiguousSpan([]Copy{{Src: 900, Dst: 50, Bytes: 100}, {Src: 10, Dst: 900, Bytes: 100}}, 1000, 1000)
	if err != nil || c != (Copy{Src: 800, Dst: 50, Bytes: 200}) {
		t.Errorf("span = %+v, %v", c, err)
	}
	if _, err := ContiguousSpan([]Copy{{Bytes: 600}, {Bytes: 600}}, 1000, 2000); err == nil {
		t.Error("oversized span accepted")
	}
}

func TestPlacementScattered(t *testing.T) {
	t.Parallel()
	g := tinyGeometry()
	src := Pool{Geometry: g, Layout: Layerwise, Slots: PoolSlots(8)}
	slots, err := Placement(1, src.Slots, 8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, s := range slots {
		if s < 0 || s >= src.Slots || seen[s] {
			t.Fatalf("bad placement %v", slots)
		}
		seen[s] = true
	}
	// Layer-wise chunk c of a slot lives in the c-th per-layer pool.
	if got := src.ChunkOffset(3, 2); got != (2*int64(src.Slots)+3)*512 {
		t.Errorf("ChunkOffset = %d", got)
	}
}
