package xfer

import (
	"context"
	"fmt"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// Config measures one layout and size against a peer: the chunks over
// the peer's pool, a destination for them, and the Sampler's reps.
// Result.Err is a read that failed (the peer or the path failing); the
// error returned must stop the run (ctx cancelled, a row not written).
func (r *Measurer) Config(ctx context.Context, t *Target, layout string, size int64) (harness.Result, error) {
	hc := harness.Case{Row: r.row(t, layout, size), Label: r.label(t.Name, layout, size), Derive: derive}
	// Free memory first: a size this machine cannot hold says so, rather
	// than blaming the pool an embedded peer sized to free memory.
	var list []peer.Chunk
	reason := r.fits(size)
	if reason == "" {
		list, reason = chunks(r.o.Geometry, r.o.Seed, layout, size, t.Info.PoolBytes)
		if reason != "" && t.Name == "embedded" && r.o.PoolBytes == 0 {
			reason += " (the embedded peer's pool is sized within 40% of free memory; --pool sets it)"
		}
	}
	if reason != "" {
		hc.Timer = &tiers.ClockTimer{}
		return harness.Result{}, r.sampler.Skip(hc, reason)
	}
	buf, err := r.be.Dst.Alloc(tiers.Device, size)
	if err != nil {
		hc.Timer = &tiers.ClockTimer{}
		return harness.Result{}, r.sampler.Skip(hc, fmt.Sprintf("destination of %s: %v", units.FormatBytes(size), err))
	}
	defer buf.Close()
	dest, err := tiers.NewDest(ctx, r.be.Dst, t.Client, buf, list[:1], tiers.Contiguous)
	if err != nil {
		hc.Timer = &tiers.ClockTimer{}
		return harness.Result{Err: err}, r.sampler.Fail(hc, 0, fmt.Errorf("register destination: %w", err))
	}
	defer dest.Close()
	if dest.Path != peer.DestHost {
		hc.Row.Set("path", t.Path+"+"+dest.Path)
		hc.Row.Set("gpudirect_reason", dest.Why)
		r.sayWhy(dest.Why)
	}
	hc.Timer = &tiers.ClockTimer{}
	hc.Fetch = func(ctx context.Context) error { return t.Client.Read(ctx, dest.Destination, list) }
	hc.Scrub = func() error { return dest.Scrub(list) }
	hc.Verify = func() error {
		if i, err := dest.Verify(list, t.Info.Seed); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		return nil
	}
	return r.sampler.Measure(ctx, hc)
}

// sayWhy says once per run why reads into GPU memory bounce.
func (r *Measurer) sayWhy(why string) {
	if why != "" && !r.saidWhy {
		r.saidWhy = true
		fmt.Fprintf(r.log, "kvtier transfer: GPUDirect unavailable, using a pinned bounce buffer: %s\n", why)
	}
}

// fits says why a destination of size bytes does not fit (with its
// read-back for GPU memory), "" when it does.
func (r *Measurer) fits(size int64) string {
	reason, err := harness.HostFitReason(r.o.Root, size)
	if err != nil {
		fmt.Fprintf(r.log, "kvtier: warning: %v\n", err)
		return ""
	}
	return reason
}

// chunks lays size bytes over a peer's pool of poolBytes: for the two
// pool layouts ceil(size/block) blocks at random slots, chunk by chunk
// (the last one cut to the size), packed into the destination; for
// contiguous one read. A reason is returned when the size does not fit
// the pool.
func chunks(g kv.Geometry, seed uint64, layout string, size, poolBytes int64) ([]peer.Chunk, string) {
	if size > poolBytes {
		return nil, fmt.Sprintf("size exceeds the peer's pool of %s", units.FormatBytes(poolBytes))
	}
	if layout == Contiguous {
		return []peer.Chunk{{Src: 0, Dst: 0, Len: size}}, ""
	}
	l := kv.Layerwise
	if layout == Blockwise {
		l = kv.Blockwise
	}
	pool := kv.Pool{Geometry: g, Layout: l, Slots: int(poolBytes / g.BlockBytes())}
	blocks := int((size + g.BlockBytes() - 1) / g.BlockBytes())
	if blocks > pool.Slots {
		return nil, fmt.Sprintf("%d blocks exceed the peer's pool of %d blocks (%s)", blocks, pool.Slots, units.FormatBytes(poolBytes))
	}
	slots, err := kv.Placement(seed, pool.Slots, blocks)
	if err != nil {
		return nil, err.Error()
	}
	cb := pool.ChunkBytes()
	per := g.ChunksPerBlock(l)
	list := make([]peer.Chunk, 0, int((size+cb-1)/cb))
	var d int64
	for _, s := range slots {
		for c := 0; c < per && d < size; c++ {
			n := min(cb, size-d)
			list = append(list, peer.Chunk{Src: pool.ChunkOffset(s, c), Dst: d, Len: n})
			d += n
		}
	}
	return list, ""
}
