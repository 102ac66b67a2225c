package diskio

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/pattern"
)

// A File is a data file open for reads (or, by OpenWrite, writes), with
// O_DIRECT or through the page cache.
type File struct {
	Path   string
	Direct bool // opened with O_DIRECT
	f      *os.File
	ino    uint64
}

// Open opens path for reading, with O_DIRECT when direct.
func Open(path string, direct bool) (*File, error) { return open(path, os.O_RDONLY, direct) }

// open opens path with flags, adding O_DIRECT when direct.
func open(path string, flags int, direct bool) (*File, error) {
	if direct {
		flags |= unix.O_DIRECT
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if direct && errors.Is(err, unix.EINVAL) {
			return nil, fmt.Errorf("open %s with O_DIRECT: the filesystem does not support it: %w", path, err)
		}
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("fstat %s: %w", path, err)
	}
	return &File{Path: path, Direct: direct, f: f, ino: st.Ino}, nil
}

// Fd is the file's descriptor.
func (f *File) Fd() int { return int(f.f.Fd()) }

// Dev returns the major and minor numbers of the device that holds the
// file, for finding it in sysfs.
func (f *File) Dev() (major, minor uint32, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(f.Fd(), &st); err != nil {
		return 0, 0, fmt.Errorf("fstat %s: %w", f.Path, err)
	}
	return unix.Major(st.Dev), unix.Minor(st.Dev), nil
}

// Check returns an error when the file is no longer what the reads
// expect: removed (or replaced by another file at its path), or shorter
// than size bytes. Reads through an open descriptor of a removed file
// would still succeed, from a file nobody can see.
func (f *File) Check(size int64) error {
	var st unix.Stat_t
	if err := unix.Fstat(f.Fd(), &st); err != nil {
		return fmt.Errorf("fstat %s: %w", f.Path, err)
	}
	var now unix.Stat_t
	if st.Nlink == 0 || unix.Stat(f.Path, &now) != nil || now.Ino != f.ino {
		return fmt.Errorf("%s was removed while it was being read", f.Path)
	}
	if st.Size < size {
		return fmt.Errorf("%s was truncated to %d bytes while it was being read (%d expected)", f.Path, st.Size, size)
	}
	return nil
}

// DropCache writes back the file's dirty pages and drops all its pages
// from the page cache, so the next read comes from the disk.
func (f *File) DropCache() error {
	if err := unix.Fsync(f.Fd()); err != nil {
		return fmt.Errorf("fsync %s: %w", f.Path, err)
	}
	if err := unix.Fadvise(f.Fd(), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("posix_fadvise %s DONTNEED: %w", f.Path, err)
	}
	return nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// writePiece is how much of the pattern Write fills and writes at once;
// writeSync is how often it writes back and drops what it wrote, so that
// a large file does not fill the page cache with dirty pages.
const (
	writePiece = 8 << 20
	writeSync  = 256 << 20
)

// Write makes path hold size bytes of the pattern of seed (the byte at
// offset o is the pattern's at o), creating the file or extending it
// from its current size: the bytes already there are kept. It writes
// back and drops the file's pages as it goes. A full filesystem is an
// error that wraps ErrNoSpace; the file is then left as far as it got.
func Write(ctx context.Context, path string, size int64, seed uint64) error {
	return write(ctx, path, size, seed, writePiece)
}

// write is Write in pieces of piece bytes (a divisor of writeSync).
func write(ctx context.Context, path string, size int64, seed uint64, piece int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	start := st.Size() - st.Size()%piece
	buf := make([]byte, piece)
	for off := start; off < size; {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := buf[:min(int64(len(buf)), size-off)]
		pattern.Fill(p, seed, off)
		if _, err := f.WriteAt(p, off); err != nil {
			return writeErr(path, err)
		}
		off += int64(len(p))
		if off%writeSync == 0 || off == size {
			if err := flush(f, off); err != nil {
				return writeErr(path, err)
			}
		}
	}
	return nil
}

// flush writes back the file up to end and drops its pages.
func flush(f *os.File, end int64) error {
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("fdatasync: %w", err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, end, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("posix_fadvise DONTNEED: %w", err)
	}
	return nil
}

// writeErr wraps err, adding ErrNoSpace when the filesystem is full.
func writeErr(path string, err error) error {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return fmt.Errorf("write %s: %w: %w", path, ErrNoSpace, err)
	}
	return fmt.Errorf("write %s: %w", path, err)
}
