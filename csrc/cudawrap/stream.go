package cudawrap

/*
#include <stdlib.h>
#include "cudawrap.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

func cstream(s Stream) C.CUstream { return C.CUstream(unsafe.Pointer(s)) }
func cevent(ev Event) C.CUevent   { return C.CUevent(unsafe.Pointer(ev)) }

// call runs f, a shim call that fills e on failure, and returns its
// Status.
func call(f func(e *C.kv_cuda_err) C.int) Status {
	var e C.kv_cuda_err
	return status(f(&e), &e)
}

// create makes a stream or an event (kind) in context c.
func (l *Lib) create(c Ctx, kind C.int) (h unsafe.Pointer, st Status) {
	st = call(func(e *C.kv_cuda_err) C.int { return C.kv_cuda_create(l.T, cctx(c), kind, &h, e) })
	return h, st
}

// destroy releases the stream or event h (kind) of context c.
func (l *Lib) destroy(c Ctx, kind C.int, h unsafe.Pointer) Status {
	return call(func(e *C.kv_cuda_err) C.int { return C.kv_cuda_destroy(l.T, cctx(c), kind, h, e) })
}

// StreamCreate creates a non-blocking stream in context c.
func (l *Lib) StreamCreate(c Ctx) (Stream, Status) {
	h, st := l.create(c, C.KV_STREAM)
	return Stream(h), st
}

// StreamDestroy is cuStreamDestroy.
func (l *Lib) StreamDestroy(c Ctx, s Stream) Status {
	return l.destroy(c, C.KV_STREAM, unsafe.Pointer(s))
}

// StreamSync is cuStreamSynchronize.
func (l *Lib) StreamSync(c Ctx, s Stream) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_stream_sync(l.T, cctx(c), cstream(s), &e), &e)
}

// StreamWait32 makes s wait until the word at device address flag is at
// least v (cuStreamWaitValue32, GEQ).
func (l *Lib) StreamWait32(c Ctx, s Stream, flag uint64, v uint32) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_stream_wait32(l.T, cctx(c), cstream(s), C.CUdeviceptr(flag), C.uint32_t(v), &e), &e)
}

// EventCreate creates a timing event.
func (l *Lib) EventCreate(c Ctx) (Event, Status) {
	h, st := l.create(c, C.KV_EVENT)
	return Event(h), st
}

// EventDestroy is cuEventDestroy.
func (l *Lib) EventDestroy(c Ctx, ev Event) Status {
	return l.destroy(c, C.KV_EVENT, unsafe.Pointer(ev))
}

// EventRecord queues ev on s.
func (l *Lib) EventRecord(c Ctx, ev Event, s Stream) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_event_record(l.T, cctx(c), cevent(ev), cstream(s), &e), &e)
}

// EventElapsed waits for stop and returns the milliseconds from start.
func (l *Lib) EventElapsed(c Ctx, start, stop Event) (float32, Status) {
	var ms C.float
	var e C.kv_cuda_err
	st := status(C.kv_cuda_event_elapsed(l.T, cctx(c), cevent(start), cevent(stop), &ms, &e), &e)
	return float32(ms), st
}

// A Plan is a list of copies held in C memory, so one cgo call can issue
// it without passing Go pointers.
type Plan struct {
	dsts, srcs, sizes *C.uint64_t
	n, cap            int
	err               error // an allocation failed
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
			p.err = errors.New("cuda: no memory for a copy plan")
			return
		}
		p.cap = n
	}
}

// Add appends a copy of n bytes from src to dst.
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

// Err is the allocation failure that left the plan unusable, if any.
func (p *Plan) Err() error { return p.err }

// Free releases the plan's C memory.
func (p *Plan) Free() {
	C.free(unsafe.Pointer(p.dsts))
	C.free(unsafe.Pointer(p.srcs))
	C.free(unsafe.Pointer(p.sizes))
	p.dsts, p.srcs, p.sizes, p.n, p.cap = nil, nil, nil, 0, 0
}

// CopyPlan issues p on s, per copy or as one batch (how), in direction
// dir; device is the ordinal named in batch location hints. It returns
// the number of copies issued before an error.
func (l *Lib) CopyPlan(c Ctx, s Stream, device, dir, how int, p *Plan) (int, Status) {
	var done C.size_t
	var e C.kv_cuda_err
	rc := C.kv_cuda_copy_plan(l.T, cctx(c), cstream(s), C.int(device), C.int(dir), C.int(how), p.dsts, p.srcs, p.sizes, C.size_t(p.n), &done, &e)
	return int(done), status(rc, &e)
}

// CanAccessPeer is cuDeviceCanAccessPeer.
func (l *Lib) CanAccessPeer(dev, peer int) (bool, Status) {
	var can C.int
	var e C.kv_cuda_err
	st := status(C.kv_cuda_can_access_peer(l.T, C.int(dev), C.int(peer), &can, &e), &e)
	return can != 0, st
}

// EnablePeer is cuCtxEnablePeerAccess; already enabled is success.
func (l *Lib) EnablePeer(c, peer Ctx) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_enable_peer(l.T, cctx(c), cctx(peer), &e), &e)
}

// CopyPeer issues p's copies with cuMemcpyPeerAsync on s (a stream of c),
// from sctx's device to dctx's, and returns how many were issued.
func (l *Lib) CopyPeer(c Ctx, s Stream, dctx, sctx Ctx, p *Plan) (int, Status) {
	var done C.size_t
	var e C.kv_cuda_err
	rc := C.kv_cuda_copy_peer(l.T, cctx(c), cstream(s), cctx(dctx), cctx(sctx), p.dsts, p.srcs, p.sizes, C.size_t(p.n), &done, &e)
	return int(done), status(rc, &e)
}
