package tiers

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

func init() {
	Register(Spec{
		Desc:   tierspec.HBM,
		Timing: Queued,
		New: func(env Env) Tier {
			return &gatherTier{env: env, srcKind: Device, name: "hbm"}
		},
	})
}

// fillChunk is how much of a device pool is pattern-filled per WriteAt.
const fillChunk = 16 << 20

// A gatherTier keeps the prefix's blocks at random slots of a source pool
// of srcKind memory and gathers them, chunk by chunk, into scattered
// slots of a working pool in device memory. The hbm and host tiers are
// both gatherTiers; they differ in where the source pool lives. In the
// Store direction the same chunks move the other way: the working pool
// holds the pattern and is scattered into the tier's pool.
type gatherTier struct {
	env     Env
	srcKind MemKind
	name    string

	srcPool, dstPool kv.Pool
	src, dst         Buffer    // the tier's pool and the working pool
	from, to         Buffer    // src and dst in the direction of the copy
	plan             []kv.Copy // the whole working set, block by block, from → to
	perBlock         int
}

// Available says why the tier cannot run in its Env.
func (t *gatherTier) Available() string {
	if t.srcKind == Device && !t.env.Backend.Caps().DeviceMemory {
		return "no device memory on the host backend (the DRAM stand-in would duplicate the host tier); run with --backend cuda"
	}
	return ""
}

// SetupBytes is the host memory of the pools for maxBlocks blocks: both
// on the host backend, only a host-resident source pool otherwise.
func (t *gatherTier) SetupBytes(maxBlocks int) int64 {
	bb := t.env.Geometry.BlockBytes()
	var n int64
	dev := t.env.Backend.Caps().DeviceMemory
	if t.srcKind != Device || !dev {
		n += int64(kv.PoolSlots(maxBlocks)) * bb
	}
	if !dev {
		n += int64(maxBlocks) * bb
	}
	return n
}

// Setup allocates the source pool (PoolSlots(maxBlocks) slots, filled
// with the pattern) and the working pool (maxBlocks slots), and places
// the blocks at random slots of both.
func (t *gatherTier) Setup(ctx context.Context, maxBlocks int) error {
	if maxBlocks <= 0 {
		return fmt.Errorf("%s: setup for %d blocks", t.name, maxBlocks)
	}
	t.Close()
	g, l := t.env.Geometry, t.env.Layout
	t.srcPool = kv.Pool{Geometry: g, Layout: l, Slots: kv.PoolSlots(maxBlocks)}
	t.dstPool = kv.Pool{Geometry: g, Layout: l, Slots: maxBlocks}
	srcSlots, err := kv.Placement(t.env.Seed, t.srcPool.Slots, maxBlocks)
	if err != nil {
		return err
	}
	dstSlots, err := kv.Placement(t.env.Seed^0x5bd1e995, t.dstPool.Slots, maxBlocks)
	if err != nil {
		return err
	}
	if t.plan, err = kv.GatherPlan(t.srcPool, srcSlots, t.dstPool, dstSlots); err != nil {
		return err
	}
	t.perBlock = g.ChunksPerBlock(l)
	b := t.env.Backend
	if t.src, err = b.Alloc(t.srcKind, t.srcPool.Size()); err != nil {
		return fmt.Errorf("%s: %s pool: %w", t.name, t.srcKind, err)
	}
	if t.dst, err = b.Alloc(Device, t.dstPool.Size()); err != nil {
		return fmt.Errorf("%s: working pool: %w", t.name, err)
	}
	t.from, t.to = t.src, t.dst
	if t.env.stores() {
		t.from, t.to, t.plan = t.dst, t.src, reversed(t.plan)
	}
	if err := FillPattern(ctx, t.from, t.env.Seed); err != nil {
		return fmt.Errorf("%s: source: %w", t.name, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := scrubAll(t.to); err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	return nil
}

// FillPattern writes the pattern of seed over all of buf, checking ctx
// between pieces.
func FillPattern(ctx context.Context, buf Buffer, seed uint64) error {
	if h := buf.Host(); h != nil {
		const piece = 256 << 20 // check for cancellation between pieces
		for off := 0; off < len(h); off += piece {
			if err := ctx.Err(); err != nil {
				return err
			}
			pattern.Fill(h[off:min(off+piece, len(h))], seed, int64(off))
		}
		return nil
	}
	chunk := make([]byte, min(fillChunk, buf.Size()))
	for off := int64(0); off < buf.Size(); off += int64(len(chunk)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := chunk[:min(int64(len(chunk)), buf.Size()-off)]
		pattern.Fill(p, seed, off)
		if _, err := buf.WriteAt(p, off); err != nil {
			return err
		}
	}
	return nil
}

// Scrub overwrites what a Fetch of p writes (the plan's destination
// chunks, or its contiguous span) so a later Verify sees only what that
// Fetch brought.
func (t *gatherTier) Scrub(p Prefix) error {
	written, err := t.writtenBy(p)
	if err != nil {
		return err
	}
	if err := ScrubRanges(t.to, written); err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	return nil
}

// writtenBy returns the copies a Fetch of p writes: the plan's chunks, or
// with Contiguous the one span that covers them.
func (t *gatherTier) writtenBy(p Prefix) ([]kv.Copy, error) {
	plan, err := t.planFor(p)
	if err != nil || t.env.Copy != Contiguous {
		return plan, err
	}
	c, err := kv.ContiguousSpan(plan, t.from.Size(), t.to.Size())
	if err != nil {
		return nil, err
	}
	return []kv.Copy{c}, nil
}

// planFor returns the copies of the first p.Blocks blocks.
func (t *gatherTier) planFor(p Prefix) ([]kv.Copy, error) {
	if t.from == nil {
		return nil, errors.New(t.name + ": not set up")
	}
	n := p.Blocks * t.perBlock
	if p.Blocks <= 0 || n > len(t.plan) {
		return nil, fmt.Errorf("%s: prefix of %d blocks, set up for %d", t.name, p.Blocks, len(t.plan)/max(t.perBlock, 1))
	}
	return t.plan[:n], nil
}

// Fetch issues the gather of the first p.Blocks blocks (their scatter
// into the tier's pool, for a store).
func (t *gatherTier) Fetch(ctx context.Context, p Prefix) error {
	plan, err := t.planFor(p)
	if err != nil {
		return err
	}
	return t.env.Backend.Copy(t.to, t.from, plan, t.env.Copy)
}

// Verify checks the destination (the working pool, or the tier's pool
// for a store) against the pattern of the source: every chunk of the
// plan for percopy and batch, the one span for contiguous.
func (t *gatherTier) Verify(p Prefix) error {
	written, err := t.writtenBy(p)
	if err != nil {
		return err
	}
	i, err := checkFrom(t.to, t.from, written, t.env.Seed)
	switch {
	case err == nil:
		return nil
	case t.env.Copy == Contiguous:
		return fmt.Errorf("%s: contiguous span: %w", t.name, err)
	}
	return fmt.Errorf("%s: block %d chunk %d: %w", t.name, i/t.perBlock, i%t.perBlock, err)
}

// checkRange checks that dst[c.Dst:+c.Bytes] holds the source pattern
// from offset c.Src.
func checkRange(dst Buffer, c kv.Copy, seed uint64) error {
	if h := dst.Host(); h != nil {
		return pattern.Check(h[c.Dst:c.Dst+c.Bytes], seed, c.Src)
	}
	buf := make([]byte, min(c.Bytes, fillChunk))
	for off := int64(0); off < c.Bytes; off += int64(len(buf)) {
		p := buf[:min(int64(len(buf)), c.Bytes-off)]
		if _, err := dst.ReadAt(p, c.Dst+off); err != nil {
			return err
		}
		if err := pattern.Check(p, seed, c.Src+off); err != nil {
			return err
		}
	}
	return nil
}

// Attrs describes the copy for the row.
func (t *gatherTier) Attrs() map[string]string {
	b := t.env.Backend
	src, dst := t.srcKind, Device
	if t.env.stores() {
		src, dst = dst, src
	}
	a := map[string]string{
		"transport": "memcpy",
		"copy":      string(t.env.Copy),
		"src_mem":   string(src),
		"dst_mem":   string(dst),
		"device":    b.Device(),
	}
	if !b.Caps().DeviceMemory {
		// The stand-in's working pool is pageable DRAM, as the path says:
		// the row must not claim device memory.
		a["path"] = "dram-to-dram (host stand-in)"
		a[sideOf(src, dst)] = string(deviceMem(b))
	}
	if l := b.LinkGBps(src, dst); l > 0 {
		a["link_gb_per_s"] = fmt.Sprint(l)
	}
	if p, ok := t.src.(Placed); ok && t.srcKind != Device && p.Placement() != "" {
		a["numa_placement"] = p.Placement()
	}
	return a
}

// sideOf names the column of the copy's device side: src_mem for a
// store's source, else dst_mem.
func sideOf(src, dst MemKind) string {
	if src == Device {
		return "src_mem"
	}
	return "dst_mem"
}

// Work is 0: the tier moves bytes, it computes nothing.
func (t *gatherTier) Work(p Prefix) float64 { return 0 }

// Close frees both pools.
func (t *gatherTier) Close() error {
	var errs []error
	closeOnce(&errs, &t.src, &t.dst)
	t.from, t.to = nil, nil
	return errors.Join(errs...)
}
