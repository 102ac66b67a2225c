package tiers

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/peer"
)

// A Dest is a peer.Destination in a backend's buffer dst: dst itself when
// it is host memory, else GPUDirect into it or a pinned bounce buffer the
// size of dst copied to it with the Dest's copy mode. It scrubs and
// verifies what reads bring, on every path.
type Dest struct {
	*peer.Destination
	b      Backend
	dst    Buffer
	bounce Buffer
	mode   CopyMode
}

// NewDest chooses how the reads of client c reach dst, a buffer of b;
// probe is a read tried to learn whether GPUDirect works. mode is how a
// bounce buffer's ranges are copied to dst (PerCopy where b lacks it).
func NewDest(ctx context.Context, b Backend, c *peer.Client, dst Buffer, probe []peer.Chunk, mode CopyMode) (*Dest, error) {
	d := &Dest{b: b, dst: dst, mode: mode}
	if h := dst.Host(); h != nil {
		pd, err := c.HostDestination(h)
		d.Destination = pd
		return d, err
	}
	dev := peer.DeviceMem{Addr: dst.Addr(), Size: dst.Size()}
	if exp, ok := b.(DMABufExporter); ok {
		dev.Export = func() (int, int64, error) { return exp.ExportDMABuf(dst) }
	}
	pd, err := c.DeviceDestination(ctx, dev, probe, d.newBounce)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.Destination = pd
	return d, nil
}

// newBounce allocates the pinned bounce buffer and its upload.
func (d *Dest) newBounce() ([]byte, func([]peer.Chunk) error, error) {
	bounce, upload, err := bounceTo(d.b, d.dst, d.mode)
	if err != nil {
		return nil, nil, err
	}
	d.bounce = bounce
	return bounce.Host(), func(list []peer.Chunk) error {
		plan := make([]kv.Copy, len(list))
		for i, c := range list {
			plan[i] = kv.Copy{Dst: c.Dst, Src: c.Dst, Bytes: c.Len}
		}
		return upload(plan)
	}, nil
}

// bounceTo allocates a pinned buffer of b the size of dst, for reads
// that cannot land in dst itself, and returns it with its upload: a copy
// of plan (whose Src and Dst are the same offsets) from it to dst.
func bounceTo(b Backend, dst Buffer, mode CopyMode) (Buffer, func(plan []kv.Copy) error, error) {
	return bounceBuffer(b, dst, mode, true)
}

// bounceFrom allocates a pinned buffer of b the size of src, for writes
// that cannot leave from src itself, and returns it with its download: a
// copy of plan (whose Src and Dst are the same offsets) from src to it.
func bounceFrom(b Backend, src Buffer, mode CopyMode) (Buffer, func(plan []kv.Copy) error, error) {
	return bounceBuffer(b, src, mode, false)
}

// bounceBuffer allocates a pinned buffer of b the size of pool and
// returns it with the copy of plan between it and pool (into pool when
// in, out of pool otherwise) in mode (PerCopy where b lacks mode),
// waited for.
func bounceBuffer(b Backend, pool Buffer, mode CopyMode, in bool) (Buffer, func(plan []kv.Copy) error, error) {
	bounce, err := b.Alloc(Pinned, pool.Size())
	if err != nil {
		return nil, nil, err
	}
	if !slices.Contains(b.CopyModes(), mode) {
		mode = PerCopy
	}
	dst, src := pool, bounce
	if !in {
		dst, src = bounce, pool
	}
	return bounce, func(plan []kv.Copy) error {
		if err := b.Copy(dst, src, plan, mode); err != nil {
			return err
		}
		return b.Sync()
	}, nil
}

// Scrub overwrites the destination ranges of list in dst and in the
// bounce buffer, so Verify sees only what the next read brought (stale
// bytes in the bounce buffer could pass for a read that never happened).
func (d *Dest) Scrub(list []peer.Chunk) error {
	cs := ChunkCopies(list)
	for _, b := range []Buffer{d.dst, d.bounce} {
		if b != nil {
			if err := ScrubRanges(b, cs); err != nil {
				return err
			}
		}
	}
	return nil
}

// A GPUDirectFlusher is a Backend whose device may not order the writes
// a NIC makes into its memory (GPUDirect RDMA) before its own later
// reads of that memory.
type GPUDirectFlusher interface {
	// FlushGPUDirectWrites makes the GPUDirect writes so far visible to
	// the backend's later copies; nothing where the device orders them.
	FlushGPUDirectWrites() error
}

// Verify checks every range of list in dst against the pattern of seed
// at its source offset; on a mismatch it returns the index in list of
// the first chunk that differs. Reads that came by GPUDirect are first
// flushed where the backend's device needs it, so the check never sees
// bytes the NIC wrote but the device does not show yet.
func (d *Dest) Verify(list []peer.Chunk, seed uint64) (int, error) {
	if f, ok := d.b.(GPUDirectFlusher); ok && d.Destination != nil && d.Path == peer.DestGPUDirect {
		if err := f.FlushGPUDirectWrites(); err != nil {
			return 0, fmt.Errorf("flush GPUDirect writes before verifying: %w", err)
		}
	}
	return CheckRanges(d.dst, ChunkCopies(list), seed)
}

// Close frees the bounce buffer; dst is the caller's.
func (d *Dest) Close() error {
	if d.bounce == nil {
		return nil
	}
	err := d.bounce.Close()
	d.bounce = nil
	return err
}

// ChunkCopies turns peer reads into copy ranges (destination in the
// working buffer, source in the peer's pool) for scrubbing and checking.
func ChunkCopies(list []peer.Chunk) []kv.Copy {
	cs := make([]kv.Copy, len(list))
	for i, c := range list {
		cs[i] = kv.Copy{Dst: c.Dst, Src: c.Src, Bytes: c.Len}
	}
	return cs
}

var errNotSetUp = errors.New("not set up")
