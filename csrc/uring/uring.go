// Package uring is the cgo binding of kvtier's io_uring shim (uring.c in
// this directory): a ring that reads lists of (file offset, address,
// length) requests from a file descriptor, with registered buffers and a
// bounded number in flight. It holds no policy; package diskio is the API
// to use.
package uring

/*
#include <stdlib.h>
#include "uring.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// A Req is one read: Len bytes at file offset Off into the memory at
// Addr, which must stay mapped until Read returns (or one write, of Len
// bytes from Addr to Off). Buf is the index of
// the registered buffer holding [Addr, Addr+Len), or -1.
type Req struct {
	Off  uint64
	Addr uintptr
	Len  uint32
	Buf  int32
}

// Its layout is the C request's, so a []Req is passed to C as it is.
var _ = [1]struct{}{}[unsafe.Sizeof(Req{})-C.sizeof_kv_uring_req]

// MaxBuffer is the largest buffer the kernel registers (1 GiB).
const MaxBuffer = 1 << 30

// An Error is a failed step of the shim: Op is the syscall or "read" for
// a request that failed, Index that request's index (-1 for other steps).
// A short read has Errno 0, Short true and Got the bytes it returned.
type Error struct {
	Op    string
	Errno syscall.Errno
	Index int
	Short bool
	Got   int64
}

func (e *Error) Error() string {
	switch {
	case e.Short:
		return fmt.Sprintf("io_uring %s %d: short %s of %d bytes", e.Op, e.Index, e.Op, e.Got)
	case e.Op == "read" || e.Op == "write":
		return fmt.Sprintf("io_uring %s %d: %v", e.Op, e.Index, e.Errno)
	}
	return fmt.Sprintf("%s: %v", e.Op, e.Errno)
}

// Unwrap returns the errno, so errors.Is(err, syscall.ENOSYS) works.
func (e *Error) Unwrap() error {
	if e.Short {
		return nil
	}
	return e.Errno
}

func newError(e *C.kv_uring_err) error {
	err := &Error{Op: C.GoString(e.op), Index: int(e.index)}
	if e.code == C.KV_URING_SHORT {
		err.Short, err.Got = true, int64(e.res)
	} else {
		err.Errno = syscall.Errno(e.code)
	}
	return err
}

// A Ring is one io_uring instance. It is not safe for concurrent use.
type Ring struct {
	r *C.kv_uring
}

// Open sets up a ring with at least entries submission entries, with
// cooperative task running where the kernel has it (5.19 on): the
// completions of O_DIRECT reads are then posted when the reader waits,
// without interrupting it.
func Open(entries int) (*Ring, error) {
	if entries < 1 || entries > 1<<15 {
		return nil, fmt.Errorf("uring: %d entries (want 1 to 32768)", entries)
	}
	r, err := setup(entries, C.KV_URING_COOP_TASKRUN)
	if errors.Is(err, syscall.EINVAL) {
		r, err = setup(entries, 0)
	}
	return r, err
}

func setup(entries int, flags C.uint) (*Ring, error) {
	var e C.kv_uring_err
	r := C.kv_uring_open(C.uint(entries), flags, &e)
	if r == nil {
		return nil, newError(&e)
	}
	return &Ring{r: r}, nil
}

// Entries is the size of the ring's submission queue: the most reads it
// keeps in flight.
func (r *Ring) Entries() int { return int(C.kv_uring_entries(r.r)) }

// Register registers bufs (each at most MaxBuffer bytes, memory that
// stays mapped while registered) for fixed reads, replacing any earlier
// set; Buf in a Req is an index into bufs. Register(nil) drops the set.
func (r *Ring) Register(bufs [][]byte) error {
	if r.r == nil {
		return errors.New("uring: ring is closed")
	}
	iov := (*[1 << 20]C.struct_iovec)(C.malloc(C.size_t(max(len(bufs), 1)) * C.sizeof_struct_iovec))
	defer C.free(unsafe.Pointer(iov))
	for i, b := range bufs {
		if len(b) == 0 || len(b) > MaxBuffer {
			return fmt.Errorf("uring: buffer %d of %d bytes (want 1 to %d)", i, len(b), MaxBuffer)
		}
		iov[i].iov_base = unsafe.Pointer(unsafe.SliceData(b))
		iov[i].iov_len = C.size_t(len(b))
	}
	var e C.kv_uring_err
	if C.kv_uring_register(r.r, &iov[0], C.uint(len(bufs)), &e) != 0 {
		return newError(&e)
	}
	return nil
}

// Read reads every request of reqs from fd with up to depth in flight
// (at most Entries). The first request that fails ends it: no more are
// submitted, those in flight are waited for, and the error names it.
func (r *Ring) Read(fd int, reqs []Req, depth int) error { return r.submit(fd, reqs, depth, false) }

// Write writes every request of reqs to fd (Len bytes from Addr to file
// offset Off) with up to depth in flight, as Read reads them.
func (r *Ring) Write(fd int, reqs []Req, depth int) error { return r.submit(fd, reqs, depth, true) }

// submit runs reqs as reads or writes through the shim.
func (r *Ring) submit(fd int, reqs []Req, depth int, write bool) error {
	if r.r == nil {
		return errors.New("uring: ring is closed")
	}
	if len(reqs) == 0 {
		return nil
	}
	var e C.kv_uring_err
	p := (*C.kv_uring_req)(unsafe.Pointer(unsafe.SliceData(reqs)))
	var rc C.int
	if write {
		rc = C.kv_uring_write(r.r, C.int(fd), p, C.long(len(reqs)), C.uint(max(depth, 1)), &e)
	} else {
		rc = C.kv_uring_read(r.r, C.int(fd), p, C.long(len(reqs)), C.uint(max(depth, 1)), &e)
	}
	if rc != 0 {
		return newError(&e)
	}
	return nil
}

// SubmitBatch is the most requests one io_uring_enter submits while
// more could be placed (the shim's KV_URING_SUBMIT_BATCH, fio's
// iodepth_batch_submit): small batches reach the device sooner than a
// whole refill of the ring at once.
const SubmitBatch = C.KV_URING_SUBMIT_BATCH

// Stats are a ring's counts since it was opened.
type Stats struct {
	Enters    uint64 // io_uring_enter calls
	MaxSubmit int    // the most requests one of them submitted
}

// Stats returns the ring's counts (zero once closed).
func (r *Ring) Stats() Stats {
	if r.r == nil {
		return Stats{}
	}
	var s C.kv_uring_stats
	C.kv_uring_stat(r.r, &s)
	return Stats{Enters: uint64(s.enters), MaxSubmit: int(s.max_submit)}
}

// Close tears the ring down; registered buffers are released with it.
func (r *Ring) Close() error {
	if r.r != nil {
		C.kv_uring_close(r.r)
		r.r = nil
	}
	return nil
}
