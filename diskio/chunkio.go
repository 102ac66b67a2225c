package diskio

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/csrc/uring"
	"github.com/kvtier/kvtier/kv"
)

// A syncIO is the Pread Reader or the Pwrite Writer of one host buffer:
// one blocking call per chunk, in order.
type syncIO struct {
	mode string // Pread or Pwrite
	buf  []byte
}

func (s *syncIO) Mode() string { return s.mode }
func (s *syncIO) Depth() int   { return 1 }
func (s *syncIO) Fixed() bool  { return false }
func (s *syncIO) Close() error { return nil }

// Read preads every chunk in order; ctx is checked every batch chunks.
func (s *syncIO) Read(ctx context.Context, f *File, plan []kv.Copy) error {
	return syncChunks(ctx, f, plan, s.buf, false)
}

// Write pwrites every chunk in order; ctx is checked every batch chunks.
func (s *syncIO) Write(ctx context.Context, f *File, plan []kv.Copy) error {
	return syncChunks(ctx, f, plan, s.buf, true)
}

// syncChunks moves every chunk of plan in order between buf and f, one
// blocking pread (write false: file offset c.Src into buf[c.Dst:]) or
// pwrite (write true: buf[c.Src:] to file offset c.Dst) each; ctx is
// checked every batch chunks.
func syncChunks(ctx context.Context, f *File, plan []kv.Copy, buf []byte, write bool) error {
	verb, prep := "read", "to"
	if write {
		verb, prep = "write", "from"
	}
	for i, c := range plan {
		if i%batch == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		mem, off := c.Dst, c.Src
		if write {
			mem, off = c.Src, c.Dst
		}
		if c.Bytes <= 0 || c.Dst < 0 || c.Src < 0 || mem+c.Bytes > int64(len(buf)) {
			return fmt.Errorf("diskio: %s of %d bytes %s %d outside a buffer of %d", verb, c.Bytes, prep, mem, len(buf))
		}
		if err := whole(f, buf[mem:mem+c.Bytes], off, write); err != nil {
			return err
		}
	}
	return nil
}

// whole preads (or pwrites) all of p at off, resuming after a partial
// call; reaching the end of the file first (a write of nothing) is an
// error.
func whole(f *File, p []byte, off int64, write bool) error {
	for done := 0; done < len(p); {
		var n int
		var err error
		if write {
			n, err = unix.Pwrite(f.Fd(), p[done:], off+int64(done))
		} else {
			n, err = unix.Pread(f.Fd(), p[done:], off+int64(done))
		}
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return chunkErr(f.Path, write, off, int64(len(p)), err)
		case n == 0:
			return shortErr(f.Path, write, off, int64(done), int64(len(p)))
		}
		done += n
	}
	return nil
}

// ringErr names the file offset of the io_uring request that failed.
func ringErr(path string, reqs []uring.Req, write bool, err error) error {
	var ue *uring.Error
	if errors.As(err, &ue) && ue.Index >= 0 && ue.Index < len(reqs) {
		q := reqs[ue.Index]
		if ue.Short {
			return shortErr(path, write, int64(q.Off), ue.Got, int64(q.Len))
		}
		return chunkErr(path, write, int64(q.Off), int64(q.Len), err)
	}
	if write {
		return writeErr(path, err)
	}
	return fmt.Errorf("read %s: %w", path, err)
}

// chunkErr is a failed read or write of n bytes at off.
func chunkErr(path string, write bool, off, n int64, err error) error {
	if write {
		return writeErr(path, fmt.Errorf("at offset %d (%d bytes): %w", off, n, err))
	}
	return fmt.Errorf("read %s at offset %d (%d bytes): %w", path, off, n, err)
}

// shortErr is a read that met the end of the file, or a write that
// stopped (no space), after got of n bytes.
func shortErr(path string, write bool, off, got, n int64) error {
	if write {
		return writeErr(path, fmt.Errorf("at offset %d: %d of %d bytes written: %w", off, got, n, unix.ENOSPC))
	}
	return fmt.Errorf("read %s at offset %d: %d of %d bytes (the file is shorter than expected)", path, off, got, n)
}
