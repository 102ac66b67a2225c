package tiers

import (
	"context"
	"fmt"
	"slices"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/peer"
)

// A Push is a store into a peer's pool (the remote tier's, and MB2's
// transfer --direction store): the source buffer holds the pattern and
// every chunk is pushed into its slot of the peer's pool (TCP, or RDMA
// WRITE over verbs), from the source itself in host memory, from GPU
// memory by GPUDirect RDMA where the NIC can read it, or else through a
// pinned bounce buffer downloaded inside the sample. Verification reads
// the pool back. On a peer not its own (kvtier serve --writable) it
// writes the peer's pattern back over what it stored when it closes, so
// that later loads from that peer verify; if it never closes, the peer
// does.
type Push struct {
	*peer.Source
	c       *peer.Client
	dst     Buffer // the working pool
	bounce  Buffer
	list    []peer.Chunk // every chunk the tier may store
	restore bool         // write the peer's pattern back on Close
	seed    uint64       // the working pool's pattern
	junk    []byte       // what Scrub writes, kept (and registered) across scrubs
	// What was written: the longest prefix of list, and the contiguous
	// copy mode's spans.
	dirtyN int
	spans  []peer.Chunk
}

// NewPush fills src, a buffer of b, with the pattern of seed and readies
// pushes of chunks of list (Dst in src, Src in the pool) by client c,
// which must have been dialled to write. From GPU memory it tries
// GPUDirect first, with list's first chunk (which it then counts as
// written); where that fails, a bounce buffer's download copies in mode
// and Why says why. restore asks Close to write the peer's pattern back.
func NewPush(ctx context.Context, b Backend, c *peer.Client, src Buffer, list []peer.Chunk, seed uint64, mode CopyMode, restore bool) (*Push, error) {
	if err := FillPattern(ctx, src, seed); err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	s := &Push{c: c, dst: src, list: list, restore: restore, seed: seed}
	var err error
	if h := src.Host(); h != nil {
		s.Source, err = c.HostSource(h)
	} else {
		dev := peer.DeviceMem{Addr: src.Addr(), Size: src.Size()}
		if exp, ok := b.(DMABufExporter); ok {
			dev.Export = func() (int, int64, error) { return exp.ExportDMABuf(src) }
		}
		probe := list[:min(len(list), 1)]
		s.dirty(probe)
		s.Source, err = c.DeviceSource(ctx, dev, probe, func() ([]byte, func([]peer.Chunk) error, error) { return s.newBounce(b, mode) })
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("source: %w", err)
	}
	return s, nil
}

// newBounce allocates the pinned bounce buffer and its download.
func (s *Push) newBounce(b Backend, mode CopyMode) ([]byte, func([]peer.Chunk) error, error) {
	bounce, pull, err := bounceFrom(b, s.dst, mode)
	if err != nil {
		return nil, nil, err
	}
	s.bounce = bounce
	return bounce.Host(), func(list []peer.Chunk) error { return pull(ChunkCopies(sameOffsets(list))) }, nil
}

// Store pushes list into the peer's pool.
func (s *Push) Store(ctx context.Context, list []peer.Chunk) error {
	s.dirty(list)
	return s.c.Write(ctx, s.Source, list)
}

// dirty notes that list is written: a prefix of s.list, or one span.
func (s *Push) dirty(list []peer.Chunk) {
	if len(list) == 1 && (len(s.list) == 0 || list[0] != s.list[0]) {
		if !slices.Contains(s.spans, list[0]) {
			s.spans = append(s.spans, list[0])
		}
		return
	}
	s.dirtyN = max(s.dirtyN, len(list))
}

// sameOffsets returns the working-pool ranges of list as chunks whose
// source and destination are both the working-pool offset.
func sameOffsets(list []peer.Chunk) []peer.Chunk {
	out := make([]peer.Chunk, len(list))
	for i, c := range list {
		out[i] = peer.Chunk{Src: c.Dst, Dst: c.Dst, Len: c.Len}
	}
	return out
}

// Scrub overwrites the pool's ranges of list on the peer and the bounce
// buffer's, so that a push that never happened fails verification.
func (s *Push) Scrub(list []peer.Chunk) error {
	if s.junk == nil {
		s.junk = slices.Repeat([]byte{scrubByte}, int(s.dst.Size()))
	}
	s.dirty(list)
	if err := s.c.WriteChunks(context.Background(), s.junk, list); err != nil {
		return fmt.Errorf("remote: scrub: %w", err)
	}
	if s.bounce != nil {
		return ScrubRanges(s.bounce, ChunkCopies(sameOffsets(list)))
	}
	return nil
}

// Verify reads the pool's ranges of list back from the peer and checks
// each against the working pool's pattern; it returns the index of the
// first chunk that differs. A peer's GPU pool written by GPUDirect RDMA
// is flushed first, so the check sees what the peer's device would.
func (s *Push) Verify(list []peer.Chunk) (int, error) {
	if err := s.c.Flush(context.Background()); err != nil {
		return 0, fmt.Errorf("before reading back: %w", err)
	}
	back := make([]byte, s.dst.Size())
	if err := s.c.ReadChunks(context.Background(), back, list); err != nil {
		return 0, fmt.Errorf("read back: %w", err)
	}
	return checkEach(ChunkCopies(list), func(c kv.Copy) error {
		return pattern.Check(back[c.Dst:c.Dst+c.Bytes], s.seed, c.Dst)
	})
}

// restorePool writes the peer's pattern back over what was written.
func (s *Push) restorePool() error {
	groups := [][]peer.Chunk{s.list[:s.dirtyN]}
	for _, c := range s.spans {
		groups = append(groups, []peer.Chunk{c})
	}
	buf := make([]byte, s.dst.Size())
	seed := s.c.Info().Seed
	for _, g := range groups {
		if len(g) == 0 {
			continue
		}
		for _, c := range g {
			pattern.Fill(buf[c.Dst:c.Dst+c.Len], seed, c.Src)
		}
		if err := s.c.WriteChunks(context.Background(), buf, g); err != nil {
			return fmt.Errorf("remote: restoring the peer's pool: %w", err)
		}
	}
	s.dirtyN, s.spans = 0, nil
	return nil
}

// Close writes the peer's pattern back over every chunk the store may
// have written (a peer not its own only), commits, and frees the bounce
// buffer. Where Close never runs (the process killed), or the pattern
// could not be written back, the peer does it once the session ends
// uncommitted (peer.Client.Commit).
func (s *Push) Close() error {
	var err error
	if s.restore {
		err = s.restorePool()
	}
	if err == nil {
		err = s.c.Commit(context.Background())
	}
	if s.bounce != nil {
		if cerr := s.bounce.Close(); err == nil {
			err = cerr
		}
		s.bounce = nil
	}
	return err
}
