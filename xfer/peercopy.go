package xfer

import (
	"context"
	"fmt"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// PeerCopy copies each size and layout from a pattern-filled pool on GPU
// src to GPU dst through the backend's peer copy, timed
// with CUDA events on a stream of the source. Rows: peer "local", path
// peercopy, transport cuda, device "GPU0->GPU1 (P2P)" or "(staged
// through host)". Where it cannot run, every row is skipped with the
// reason and the run goes on.
func (r *Measurer) PeerCopy(ctx context.Context, src, dst int) error {
	name := fmt.Sprintf("GPU%d->GPU%d", src, dst)
	var pc tiers.PeerCopy
	why := r.be.PeerCopyWhy
	if r.be.PeerCopy != nil {
		var err error
		if pc, err = r.be.PeerCopy.OpenPeerCopy(src, dst); err != nil {
			why = err.Error()
		}
	} else if why == "" {
		why = "peer copy needs the cuda backend"
	}
	if pc == nil {
		return r.skipPeerCopy(name, why)
	}
	defer pc.Close()
	pool, err := r.peerCopyPool(ctx, pc)
	if err != nil {
		return r.skipPeerCopy(name, err.Error())
	}
	defer pool.Close()
	fmt.Fprintf(r.log, "kvtier transfer: peer copy %s (%s), pool %s on GPU%d\n", name, pc.Link(), units.FormatBytes(pool.Size()), src)
	t := &Target{Name: "local", Path: PathPeerCopy,
		Info: peer.Info{Transport: "cuda", Device: name + " (" + pc.Link() + ")", Mem: DstGPU, PoolBytes: pool.Size()}}
	for _, layout := range r.o.Layouts {
		for _, size := range r.o.Sizes {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := r.peerCopyConfig(ctx, pc, pool, t, dst, layout, size); err != nil {
				return err
			}
		}
	}
	return nil
}

// peerCopyRow is the row of a peer copy configuration.
func (r *Measurer) peerCopyRow(t *Target, pc tiers.PeerCopy, layout string, size int64) harness.Case {
	hc := harness.Case{Row: r.row(t, layout, size), Label: r.label(PathPeerCopy, layout, size), Derive: derive}
	hc.Row.Backend = "cuda"
	hc.Row.Set("conns", 1)
	hc.Row.Set("dst_mem", DstGPU)
	if pc != nil {
		hc.Row.Set("gpu", pc.GPUs())
		hc.Timer = pc.Timer()
	} else {
		hc.Timer = &tiers.ClockTimer{}
	}
	return hc
}

func (r *Measurer) skipPeerCopy(name, why string) error {
	t := &Target{Name: "local", Path: PathPeerCopy, Info: peer.Info{Transport: "cuda", Device: name, Mem: DstGPU}}
	for _, layout := range r.o.Layouts {
		for _, size := range r.o.Sizes {
			if err := r.sampler.Skip(r.peerCopyRow(t, nil, layout, size), why); err != nil {
				return err
			}
		}
	}
	return nil
}

// peerCopyPool allocates the source pool on the source GPU, large enough
// for the largest size over whole blocks within the GPU's free memory,
// filled with the pattern.
func (r *Measurer) peerCopyPool(ctx context.Context, pc tiers.PeerCopy) (tiers.Buffer, error) {
	bb := r.o.Geometry.BlockBytes()
	var want int64
	for _, s := range r.o.Sizes {
		want = max(want, s+s/4)
	}
	want = (want + bb - 1) / bb * bb
	if free, err := pc.FreeMem(0); err == nil && float64(want) > harness.MemoryShare*float64(free) {
		want = max(bb, int64(harness.MemoryShare*float64(free))/bb*bb)
	}
	pool, err := pc.Alloc(0, want)
	if err != nil {
		return nil, fmt.Errorf("peer copy: source pool: %w", err)
	}
	if err := tiers.FillPattern(ctx, pool, r.peerCopySeed()); err != nil {
		pool.Close()
		return nil, fmt.Errorf("peer copy: fill source pool: %w", err)
	}
	return pool, nil
}

func (r *Measurer) peerCopySeed() uint64 { return r.o.Seed ^ 0x7065657270 }

// peerCopyConfig measures one layout and size of a peer copy.
func (r *Measurer) peerCopyConfig(ctx context.Context, pc tiers.PeerCopy, pool tiers.Buffer, t *Target, dst int, layout string, size int64) error {
	hc := r.peerCopyRow(t, pc, layout, size)
	list, reason := chunks(r.o.Geometry, r.o.Seed, layout, size, pool.Size())
	if reason == "" {
		if free, err := pc.FreeMem(1); err == nil {
			reason = harness.FitReason(fmt.Sprintf("GPU%d memory", dst), size, free)
		}
	}
	if reason != "" {
		return r.sampler.Skip(hc, reason)
	}
	buf, err := pc.Alloc(1, size)
	if err != nil {
		return r.sampler.Skip(hc, fmt.Sprintf("destination of %s on GPU%d: %v", units.FormatBytes(size), dst, err))
	}
	defer buf.Close()
	plan := tiers.ChunkCopies(list)
	hc.Fetch = func(context.Context) error { return pc.Copy(buf, pool, plan) }
	hc.Scrub = func() error { return tiers.ScrubRanges(buf, plan) }
	hc.Verify = func() error {
		if i, err := tiers.CheckRanges(buf, plan, r.peerCopySeed()); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		return nil
	}
	_, err = r.sampler.Measure(ctx, hc)
	return err
}
