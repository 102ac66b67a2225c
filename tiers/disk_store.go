package tiers

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/kvtier/kvtier/diskio"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/pattern"
)

// The disk tier's store: the working pool holds the pattern and every
// chunk is written to its slot of a file of the store's own (never the
// file loads verify against), by io_uring or pwrite, O_DIRECT unless
// cached; a sample ends when the writes complete (--sync none) or when
// fdatasync has made them durable (--sync fdatasync). On a GPU the
// working pool is first copied into a pinned bounce buffer, inside the
// sample, except for GPUDirect Storage (--io cufile), which writes
// straight from GPU memory with cuFileWrite. Verification reads the file
// back.

// storeSalt makes a store file's initial bytes differ from what a store
// writes, so that a write that never happened cannot pass verification.
const storeSalt = 0x73746f7265

// fileSeed is the pattern seed the tier's file is written with.
func (t *diskTier) fileSeed() uint64 {
	if t.env.stores() {
		return t.env.Seed ^ storeSalt
	}
	return t.env.Seed
}

// setupStore fills the working pool with the pattern and sets up the
// writes, the writer (from the working pool, a bounce buffer or, for
// cuFile, GPU memory) and the descriptor verification reads through.
func (t *diskTier) setupStore(ctx context.Context, size int64) error {
	b := t.env.Backend
	var err error
	if t.dst, err = b.Alloc(Device, size); err != nil {
		return fmt.Errorf("disk: working pool: %w", err)
	}
	if err := FillPattern(ctx, t.dst, t.env.Seed); err != nil {
		return fmt.Errorf("disk: working pool: %w", err)
	}
	t.wplan = reversed(t.plan)
	if t.back, err = os.OpenFile(t.file.path, os.O_RDWR, 0); err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	src, err := t.hostIO(false)
	if err != nil || t.v.io == diskio.CUFile {
		return err
	}
	if t.writer, err = diskio.NewWriter(t.v.io, t.opts.IODepth, src); err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	return nil
}

// writes returns the writes of a store of p (a load's reads turned
// around) and the ranges of the working pool they leave from.
func (t *diskTier) writes(p Prefix) (writes, from []kv.Copy, err error) {
	reads, filled, err := t.reads(p)
	if err != nil {
		return nil, nil, err
	}
	if t.env.Copy == Contiguous {
		return reversed(reads), filled, nil
	}
	return t.wplan[:len(reads)], filled, nil
}

// store writes the first p.Blocks blocks to the file: downloaded first
// on the bounce path, by cuFile from GPU memory for GPUDirect Storage,
// made durable after with --sync fdatasync.
func (t *diskTier) store(ctx context.Context, p Prefix) error {
	writes, from, err := t.writes(p)
	if err != nil {
		return err
	}
	if t.pull != nil {
		if err := t.pull(from); err != nil {
			return fmt.Errorf("disk: device to bounce buffer: %w", err)
		}
	}
	if t.gds != nil {
		err = t.gds.Write(ctx, t.f, writes)
	} else {
		err = t.writer.Write(ctx, t.f, writes)
	}
	if err != nil {
		return err
	}
	if t.v.sync == SyncData {
		return t.f.Sync()
	}
	return nil
}

// scrubStore overwrites what a store of p writes, in the file and in the
// bounce buffer it leaves from.
func (t *diskTier) scrubStore(p Prefix) error {
	writes, from, err := t.writes(p)
	if err != nil {
		return err
	}
	if t.bounce != nil {
		if err := ScrubRanges(t.bounce, from); err != nil {
			return fmt.Errorf("disk: %w", err)
		}
	}
	junk := make([]byte, 0)
	for _, c := range writes {
		if int64(len(junk)) < c.Bytes {
			junk = slices.Repeat([]byte{scrubByte}, int(c.Bytes))
		}
		if _, err := t.back.WriteAt(junk[:c.Bytes], c.Dst); err != nil {
			return fmt.Errorf("disk: scrub: %w", err)
		}
	}
	return nil
}

// verifyStore reads back every range of the file a store of reads (the
// load's reads it turned around) wrote and checks it against the
// working pool's pattern.
func (t *diskTier) verifyStore(reads []kv.Copy) error {
	if t.back == nil {
		return fmt.Errorf("disk: %w", errNotSetUp)
	}
	per := t.perBlock
	if t.env.Copy == Contiguous {
		per = 1
	}
	i, err := checkEach(reads, func(c kv.Copy) error {
		buf := make([]byte, c.Bytes)
		if _, err := t.back.ReadAt(buf, c.Src); err != nil {
			return fmt.Errorf("read back %s at %d: %w", t.file.path, c.Src, err)
		}
		return pattern.Check(buf, t.env.Seed, c.Dst)
	})
	if err != nil {
		return fmt.Errorf("disk: block %d chunk %d: %w", i/per, i%per, err)
	}
	return nil
}

// storeAttrs turns a load's attributes around for a store.
func (t *diskTier) storeAttrs(a map[string]string) {
	a["src_mem"], a["dst_mem"] = string(deviceMem(t.env.Backend)), "disk"
	if t.v.cached {
		a["dst_mem"] = "pagecache"
	}
	a["sync"] = t.v.sync
	if t.v.io == diskio.Pread {
		a["transport"] = diskio.Pwrite
	}
	if t.gds != nil {
		a["iodepth"] = fmt.Sprint(t.gds.Depth())
	}
	if t.writer != nil {
		a["iodepth"] = fmt.Sprint(t.writer.Depth())
		if t.v.io == diskio.Uring {
			a["fixed_bufs"] = fmt.Sprint(t.writer.Fixed())
		}
	}
}

// An IOLogger is a tier that can say what its I/O for a prefix is, as a
// fio iolog, so that fio can replay exactly what it did (the disk tier's
// anchor in go test -bench DiskVsFio).
type IOLogger interface {
	// IOLog writes the reads (a load) or writes (a store) of a Fetch of
	// p, in order, as an iolog naming file.
	IOLog(w io.Writer, p Prefix, file string) error
	// File is the path of the file the tier reads or writes.
	File() string
}

// IOLog writes the reads or writes of a Fetch of p as a fio iolog of
// file.
func (t *diskTier) IOLog(w io.Writer, p Prefix, file string) error {
	reads, _, err := t.reads(p)
	if err != nil {
		return err
	}
	ops := make([]diskio.Op, len(reads))
	for i, c := range reads {
		ops[i] = diskio.Op{Off: c.Src, Len: c.Bytes}
	}
	return diskio.WriteIOLog(w, file, t.env.stores(), ops)
}

// File is the path of the tier's file ("" before Setup).
func (t *diskTier) File() string {
	if t.file == nil {
		return ""
	}
	return t.file.path
}
