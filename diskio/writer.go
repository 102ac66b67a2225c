package diskio

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/csrc/uring"
	"github.com/kvtier/kvtier/kv"
)

// Pwrite is the write counterpart of Pread: one pwrite per chunk, one at
// a time.
const Pwrite = "pwrite"

// A Writer writes plans from one host buffer, src, to files: Src of each
// copy is an offset in src, Dst a file offset (a store's plan is a
// load's turned around).
type Writer interface {
	// Write writes every chunk of plan to f. A chunk that fails, or
	// writes short (a full disk), ends it with an error naming the
	// chunk; ctx is checked between batches.
	Write(ctx context.Context, f *File, plan []kv.Copy) error
	Engine // Mode Uring or Pwrite; Fixed: writes leave from registered buffers (WRITE_FIXED)
}

// NewWriter returns a writer of mode (Uring, or Pwrite; Pread is taken
// for Pwrite, so one --io value names both ways) from src with up to
// depth writes in flight. src is memory outside the Go heap, as for
// NewReader.
func NewWriter(mode string, depth int, src []byte) (Writer, error) {
	switch mode {
	case Pwrite, Pread:
		return &syncIO{mode: Pwrite, buf: src}, nil
	case Uring:
		r, err := newRingReader(depth, src, uring.MaxBuffer)
		if err != nil {
			return nil, err
		}
		return &ringWriter{r}, nil
	}
	return nil, fmt.Errorf("diskio: unknown mode %q (want %s or %s)", mode, Uring, Pwrite)
}

// A ringWriter is a ring whose requests write.
type ringWriter struct{ r *ringReader }

func (w *ringWriter) Mode() string { return Uring }
func (w *ringWriter) Depth() int   { return w.r.depth }
func (w *ringWriter) Fixed() bool  { return w.r.fixed }
func (w *ringWriter) Close() error { return w.r.Close() }

// Write turns the plan into ring requests and submits them a batch per
// cgo call.
func (w *ringWriter) Write(ctx context.Context, f *File, plan []kv.Copy) error {
	r := w.r
	for i := 0; i < len(plan); {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.reqs = r.reqs[:0]
		for ; i < len(plan) && len(r.reqs) < batch; i++ {
			c := plan[i]
			if err := r.addRange("write", c.Dst, c.Src, c.Bytes); err != nil {
				return err
			}
		}
		if err := r.ring.Write(f.Fd(), r.reqs, r.depth); err != nil {
			return w.writeErr(f, err)
		}
	}
	return nil
}

// writeErr names the file offset of the request that failed.
func (w *ringWriter) writeErr(f *File, err error) error {
	return ringErr(f.Path, w.r.reqs, true, err)
}

// OpenWrite opens path for reading and writing, with O_DIRECT when
// direct; the file must exist.
func OpenWrite(path string, direct bool) (*File, error) { return open(path, unix.O_RDWR, direct) }

// Sync makes what was written to f durable (fdatasync).
func (f *File) Sync() error {
	if err := unix.Fdatasync(f.Fd()); err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Path, err)
	}
	return nil
}
