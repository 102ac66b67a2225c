package diskio

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/csrc/uring"
	"github.com/kvtier/kvtier/kv"
)

// Ways of submitting reads (the disk tier's --io).
const (
	Uring = "uring" // io_uring: registered buffers, Depth reads in flight
	Pread = "pread" // one pread per chunk, one at a time
)

// ErrRefused says the kernel would not set up an io_uring: built
// without it, turned off by the kernel.io_uring_disabled sysctl, or
// blocked by a seccomp filter (containers often block it).
var ErrRefused = errors.New("io_uring refused by the kernel")

// A Reader reads plans from files into one host buffer, dst: Src of
// each copy is a file offset, Dst an offset in dst.
type Reader interface {
	// Read reads every chunk of plan from f. A chunk that fails, or
	// reads short because the file shrank, ends it with an error naming
	// the chunk; ctx is checked between batches.
	Read(ctx context.Context, f *File, plan []kv.Copy) error
	Engine // Mode Uring or Pread; Fixed: reads land in registered buffers (READ_FIXED)
}

// An Engine is what a Reader or a Writer says of itself.
type Engine interface {
	// Mode is how it moves bytes: Uring, Pread or Pwrite.
	Mode() string
	// Depth is the most requests it keeps in flight.
	Depth() int
	// Fixed says requests use registered buffers (io_uring's READ_FIXED
	// or WRITE_FIXED): false for pread and pwrite, or where registering
	// failed.
	Fixed() bool
	Close() error
}

// NewReader returns a reader of mode into dst with up to depth reads in
// flight (Uring; Pread reads one at a time). dst must be memory outside
// the Go heap that stays mapped while the reader is open (the backends'
// buffers are). An io_uring the kernel refuses is an error wrapping
// ErrRefused. Where registering dst fails (a memlock limit), the ring
// reads without registered buffers and Fixed says so.
func NewReader(mode string, depth int, dst []byte) (Reader, error) {
	switch mode {
	case Pread:
		return &syncIO{mode: Pread, buf: dst}, nil
	case Uring:
		return newRingReader(depth, dst, uring.MaxBuffer)
	}
	return nil, fmt.Errorf("diskio: unknown mode %q (want %s or %s)", mode, Uring, Pread)
}

// ProbeUring sets up and tears down a small ring: nil where io_uring
// runs here, else an error wrapping ErrRefused (or another setup error).
func ProbeUring() error {
	r, err := uring.Open(1)
	if err != nil {
		return Refused(err)
	}
	return r.Close()
}

// Refused wraps an io_uring_setup failure that means the kernel will not
// run rings here in ErrRefused; other errors come back as they are.
func Refused(err error) error {
	var ue *uring.Error
	if errors.As(err, &ue) && ue.Op == "io_uring_setup" &&
		(ue.Errno == syscall.ENOSYS || ue.Errno == syscall.EPERM || ue.Errno == syscall.EACCES) {
		return fmt.Errorf("%w (%s: %s)", ErrRefused, ue.Op, errnoName(ue.Errno))
	}
	return err
}

func errnoName(e syscall.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n + ", " + e.Error()
	}
	return e.Error()
}

// batch is how many requests one cgo call submits: ctx is checked
// between batches.
const batch = 4096

type ringReader struct {
	ring   *uring.Ring
	dst    []byte
	depth  int
	fixed  bool
	region int64 // bytes of dst per registered buffer
	reqs   []uring.Req
}

// newRingReader returns a ring reader into dst, registered as buffers of
// region bytes (at most uring.MaxBuffer).
func newRingReader(depth int, dst []byte, region int) (*ringReader, error) {
	if depth < 1 {
		return nil, fmt.Errorf("diskio: io depth %d", depth)
	}
	ring, err := uring.Open(depth)
	if err != nil {
		return nil, Refused(err)
	}
	r := &ringReader{ring: ring, dst: dst, depth: min(depth, ring.Entries()), region: int64(region)}
	var bufs [][]byte
	for off := 0; off < len(dst); off += region {
		bufs = append(bufs, dst[off:min(off+region, len(dst))])
	}
	r.fixed = len(bufs) > 0 && ring.Register(bufs) == nil
	return r, nil
}

func (r *ringReader) Mode() string { return Uring }
func (r *ringReader) Depth() int   { return r.depth }
func (r *ringReader) Fixed() bool  { return r.fixed }

// Read turns the plan into ring requests, split where a chunk crosses a
// registered buffer's end, and submits them a batch per cgo call.
func (r *ringReader) Read(ctx context.Context, f *File, plan []kv.Copy) error {
	for i := 0; i < len(plan); {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.reqs = r.reqs[:0]
		first := i
		for ; i < len(plan) && len(r.reqs) < batch; i++ {
			if err := r.add(plan[i]); err != nil {
				return err
			}
		}
		if err := r.ring.Read(f.Fd(), r.reqs, r.depth); err != nil {
			return r.readErr(f, plan[first:i], err)
		}
	}
	return nil
}

// add appends the requests of copy c, a read of c.Bytes from file
// offset c.Src to buffer offset c.Dst.
func (r *ringReader) add(c kv.Copy) error { return r.addRange("read", c.Src, c.Dst, c.Bytes) }

// addRange appends the requests that move n bytes between file offset
// file and buffer offset mem, split where a registered buffer ends.
func (r *ringReader) addRange(op string, file, mem, n int64) error {
	if n <= 0 || mem < 0 || file < 0 || mem+n > int64(len(r.dst)) {
		return fmt.Errorf("diskio: %s of %d bytes at %d outside a buffer of %d", op, n, mem, len(r.dst))
	}
	for n > 0 {
		k := min(n, r.region-mem%r.region)
		buf := int32(-1)
		if r.fixed {
			buf = int32(mem / r.region)
		}
		addr := uintptr(unsafe.Pointer(&r.dst[mem]))
		r.reqs = append(r.reqs, uring.Req{Off: uint64(file), Addr: addr, Len: uint32(k), Buf: buf})
		file, mem, n = file+k, mem+k, n-k
	}
	return nil
}

// readErr names the file offset of the request that failed.
func (r *ringReader) readErr(f *File, plan []kv.Copy, err error) error {
	return ringErr(f.Path, r.reqs, false, err)
}

func (r *ringReader) Close() error { return r.ring.Close() }
