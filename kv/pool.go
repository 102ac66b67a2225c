package kv

import (
	"fmt"
	"math/rand/v2"
)

// A Pool is the address arithmetic of a KV pool of Slots blocks in one
// layout. It holds no memory; a Buffer of Size bytes backs it.
type Pool struct {
	Geometry Geometry
	Layout   Layout
	Slots    int
}

// Size is the bytes a buffer needs to hold the pool.
func (p Pool) Size() int64 { return int64(p.Slots) * p.Geometry.BlockBytes() }

// ChunkBytes is the size of each chunk of the pool.
func (p Pool) ChunkBytes() int64 { return p.Geometry.ChunkBytes(p.Layout) }

// ChunkOffset returns the byte offset of chunk c of the block at slot. In
// the layer-wise layout chunk c lives in the c-th per-layer pool:
// offset (c×Slots + slot)×chunk; in the block-wise layout the block is one
// chunk at slot×block.
func (p Pool) ChunkOffset(slot, c int) int64 {
	cb := p.ChunkBytes()
	if p.Layout == Blockwise {
		return int64(slot) * cb
	}
	return (int64(c)*int64(p.Slots) + int64(slot)) * cb
}

// A Copy is one chunk copy of a plan: Bytes from offset Src of the source
// buffer to offset Dst of the destination buffer.
type Copy struct {
	Dst, Src, Bytes int64
}

// GatherPlan lists the chunk copies that bring the blocks at srcSlots of
// src to dstSlots of dst, block by block, chunk by chunk. Both pools must
// share geometry and layout.
func GatherPlan(src Pool, srcSlots []int, dst Pool, dstSlots []int) ([]Copy, error) {
	if src.Layout != dst.Layout || src.Geometry.BlockBytes() != dst.Geometry.BlockBytes() {
		return nil, fmt.Errorf("kv: gather between unlike pools (%s, %s)", src.Layout, dst.Layout)
	}
	if len(srcSlots) != len(dstSlots) {
		return nil, fmt.Errorf("kv: gather of %d blocks into %d slots", len(srcSlots), len(dstSlots))
	}
	n := src.Geometry.ChunksPerBlock(src.Layout)
	cb := src.ChunkBytes()
	plan := make([]Copy, 0, len(srcSlots)*n)
	for i := range srcSlots {
		for c := range n {
			plan = append(plan, Copy{Dst: dst.ChunkOffset(dstSlots[i], c), Src: src.ChunkOffset(srcSlots[i], c), Bytes: cb})
		}
	}
	return plan, nil
}

// Placement returns n distinct slots of a pool of the given size in a
// random order fixed by seed, so blocks are never contiguous by accident
// and a run is reproducible.
func Placement(seed uint64, slots, n int) ([]int, error) {
	if n > slots {
		return nil, fmt.Errorf("kv: %d blocks do not fit a pool of %d slots", n, slots)
	}
	r := rand.New(rand.NewPCG(seed, 0x6b767469657221))
	return r.Perm(slots)[:n], nil
}

// PoolSlots is the number of slots a source pool gets for a working set of
// n blocks: a quarter more, at least one more, so placement is scattered.
func PoolSlots(n int) int {
	s := n + n/4
	if s == n {
		s = n + 1
	}
	return s
}

// ContiguousSpan returns the one copy that Contiguous mode issues for
// plan: the plan's whole payload as a single span, starting at the first
// chunk's offsets, moved back where needed so it stays inside buffers of
// srcSize and dstSize bytes. Every backend issues this span so that
// verification of a contiguous copy knows what to expect.
func ContiguousSpan(plan []Copy, srcSize, dstSize int64) (Copy, error) {
	if len(plan) == 0 {
		return Copy{}, nil
	}
	var total int64
	for _, c := range plan {
		total += c.Bytes
	}
	if total > srcSize || total > dstSize {
		return Copy{}, fmt.Errorf("kv: contiguous copy of %d bytes exceeds its buffers (%d, %d)", total, srcSize, dstSize)
	}
	return Copy{Src: min(plan[0].Src, srcSize-total), Dst: min(plan[0].Dst, dstSize-total), Bytes: total}, nil
}

// CheckPlan reports the first copy of plan that falls outside buffers of
// srcSize and dstSize bytes.
func CheckPlan(plan []Copy, srcSize, dstSize int64) error {
	for i, c := range plan {
		if c.Bytes < 0 || c.Src < 0 || c.Dst < 0 || c.Src+c.Bytes > srcSize || c.Dst+c.Bytes > dstSize {
			return fmt.Errorf("kv: copy %d (%d bytes from %d to %d) is outside its buffers (%d, %d)", i, c.Bytes, c.Src, c.Dst, srcSize, dstSize)
		}
	}
	return nil
}
