package cuda

/*
#include <stdlib.h>
#include "cudawrap.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// A Stream is a non-blocking CUDA stream of the context.
type Stream struct {
	c *Context
	s C.CUstream
}

// NewStream creates a stream that does not synchronise with the legacy
// NULL stream (cuMemcpyBatchAsync refuses that one).
func (c *Context) NewStream() (*Stream, error) {
	var s C.CUstream
	var e C.kv_cuda_err
	if err := c.d.err(C.kv_cuda_stream_create(c.d.l, c.ctx, &s, &e), &e); err != nil {
		return nil, err
	}
	return &Stream{c: c, s: s}, nil
}

// Sync waits for all work on the stream.
func (s *Stream) Sync() error {
	var e C.kv_cuda_err
	return s.c.d.err(C.kv_cuda_stream_sync(s.c.d.l, s.c.ctx, s.s, &e), &e)
}

// Destroy releases the stream (queued work still completes).
func (s *Stream) Destroy() error {
	if s.s == nil {
		return nil
	}
	var e C.kv_cuda_err
	st := s.s
	s.s = nil
	return s.c.d.err(C.kv_cuda_stream_destroy(s.c.d.l, s.c.ctx, st, &e), &e)
}

// WaitFlag makes the stream wait until the 32-bit word at device address
// flag is at least v (cuStreamWaitValue32). ErrUnsupported without it.
func (s *Stream) WaitFlag(flag uint64, v uint32) error {
	var e C.kv_cuda_err
	return s.c.d.err(C.kv_cuda_stream_wait32(s.c.d.l, s.c.ctx, s.s, C.CUdeviceptr(flag), C.uint32_t(v), &e), &e)
}

// An Event is a timing event.
type Event struct {
	c  *Context
	ev C.CUevent
}

// NewEvent creates a timing event.
func (c *Context) NewEvent() (*Event, error) {
	var ev C.CUevent
	var e C.kv_cuda_err
	if err := c.d.err(C.kv_cuda_event_create(c.d.l, c.ctx, &ev, &e), &e); err != nil {
		return nil, err
	}
	return &Event{c: c, ev: ev}, nil
}

// Record queues the event on s.
func (ev *Event) Record(s *Stream) error {
	var e C.kv_cuda_err
	return ev.c.d.err(C.kv_cuda_event_record(ev.c.d.l, ev.c.ctx, ev.ev, s.s, &e), &e)
}

// Elapsed waits for stop and returns the seconds from start to stop.
func Elapsed(start, stop *Event) (float64, error) {
	var ms C.float
	var e C.kv_cuda_err
	c := stop.c
	if err := c.d.err(C.kv_cuda_event_elapsed(c.d.l, c.ctx, start.ev, stop.ev, &ms, &e), &e); err != nil {
		return 0, err
	}
	return float64(ms) / 1e3, nil
}

// Destroy releases the event.
func (ev *Event) Destroy() error {
	if ev.ev == nil {
		return nil
	}
	var e C.kv_cuda_err
	x := ev.ev
	ev.ev = nil
	return ev.c.d.err(C.kv_cuda_event_destroy(ev.c.d.l, ev.c.ctx, x, &e), &e)
}

// A Dir is the direction of a copy plan.
type Dir int

// Directions.
const (
	HostToDevice   Dir = C.KV_H2D
	DeviceToHost   Dir = C.KV_D2H
	DeviceToDevice Dir = C.KV_D2D
)

// String returns "H2D", "D2H" or "D2D".
func (d Dir) String() string {
	switch d {
	case HostToDevice:
		return "H2D"
	case DeviceToHost:
		return "D2H"
	case DeviceToDevice:
		return "D2D"
	}
	return fmt.Sprintf("Dir(%d)", int(d))
}

// A How is the way a plan is issued.
type How int

// Ways to issue a plan.
const (
	// PerCopy issues one cuMemcpy*Async per copy (all in one cgo call).
	PerCopy How = C.KV_PERCOPY
	// Batch issues the plan as one cuMemcpyBatchAsync (CUDA 12.8+).
	Batch How = C.KV_BATCH
)

// A Plan is a list of copies held in C memory, so one cgo call can issue
// it without passing Go pointers. Reuse a Plan across samples; Free it
// at the end.
type Plan struct {
	dsts, srcs, sizes *C.uint64_t
	n, cap            int
	err               error // an allocation failed; Copy returns it
}

// Reset empties the plan and makes room for n copies.
func (p *Plan) Reset(n int) {
	p.n, p.err = 0, nil
	if n > p.cap {
		p.Free()
		sz := C.size_t(n) * C.size_t(unsafe.Sizeof(C.uint64_t(0)))
		p.dsts = (*C.uint64_t)(C.malloc(sz))
		p.srcs = (*C.uint64_t)(C.malloc(sz))
		p.sizes = (*C.uint64_t)(C.malloc(sz))
		if p.dsts == nil || p.srcs == nil || p.sizes == nil {
			p.Free()
			p.err = fmt.Errorf("cuda: no memory for a plan of %d copies", n)
			return
		}
		p.cap = n
	}
}

// Add appends a copy of n bytes from address src to address dst (device
// pointers or host addresses as the plan's direction says).
func (p *Plan) Add(dst, src uint64, n int64) {
	if p.err != nil {
		return
	}
	if p.n == p.cap {
		old := *p
		*p = Plan{}
		if p.Reset(max(16, 2*old.cap)); p.err != nil {
			old.Free()
			return
		}
		copy(unsafe.Slice(p.dsts, p.cap), unsafe.Slice(old.dsts, old.n))
		copy(unsafe.Slice(p.srcs, p.cap), unsafe.Slice(old.srcs, old.n))
		copy(unsafe.Slice(p.sizes, p.cap), unsafe.Slice(old.sizes, old.n))
		p.n = old.n
		old.Free()
	}
	unsafe.Slice(p.dsts, p.cap)[p.n] = C.uint64_t(dst)
	unsafe.Slice(p.srcs, p.cap)[p.n] = C.uint64_t(src)
	unsafe.Slice(p.sizes, p.cap)[p.n] = C.uint64_t(n)
	p.n++
}

// Len is the number of copies in the plan.
func (p *Plan) Len() int { return p.n }

// Free releases the plan's C memory.
func (p *Plan) Free() {
	C.free(unsafe.Pointer(p.dsts))
	C.free(unsafe.Pointer(p.srcs))
	C.free(unsafe.Pointer(p.sizes))
	p.dsts, p.srcs, p.sizes, p.n, p.cap = nil, nil, nil, 0, 0
}

// Copy enqueues the plan on s in one cgo call and returns how many copies
// were issued before an error. Batch returns ErrUnsupported where the
// driver lacks cuMemcpyBatchAsync.
func (s *Stream) Copy(dir Dir, how How, p *Plan) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	if p.n == 0 {
		return 0, nil
	}
	var done C.size_t
	var e C.kv_cuda_err
	rc := C.kv_cuda_copy_plan(s.c.d.l, s.c.ctx, s.s, C.int(s.c.ordinal), C.int(dir), C.int(how), p.dsts, p.srcs, p.sizes, C.size_t(p.n), &done, &e)
	if err := s.c.d.err(rc, &e); err != nil {
		return int(done), fmt.Errorf("%s copy %d of %d: %w", dir, int(done), p.n, err)
	}
	return int(done), nil
}
