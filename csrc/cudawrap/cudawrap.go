// Package cudawrap is the cgo binding of kvtier's CUDA driver shim
// (cudawrap.c in this directory): it loads libcuda at run time and calls
// the shim's functions with Go types. It holds no policy; package cuda is
// the API to use.
//
// Every call returns a Status whose Code is 0 on success, else the raw
// CUresult or a negative loader code, with the driver function that
// failed.
package cudawrap

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "cudawrap.h"
*/
import "C"

import (
	"unsafe"

	"github.com/kvtier/kvtier/csrc/shim"
)

// Handles the driver returns, opaque to Go.
type (
	Ctx    unsafe.Pointer // CUcontext
	Stream unsafe.Pointer // CUstream
	Event  unsafe.Pointer // CUevent
)

// ErrorNotSupported is the CUresult callers branch on; the loader's codes
// in Status.Code are package shim's.
const ErrorNotSupported = C.KV_CUDA_ERROR_NOT_SUPPORTED

// Flags and attributes, by their cuda.h values (csrc's ABI test checks
// them against NVIDIA's headers).
const (
	MemHostAllocPortable   = C.KV_CU_MEMHOSTALLOC_PORTABLE
	MemHostAllocDeviceMap  = C.KV_CU_MEMHOSTALLOC_DEVICEMAP
	MemHostRegisterDefault = C.KV_CU_MEMHOSTREGISTER_PORTABLE | C.KV_CU_MEMHOSTREGISTER_DEVICEMAP

	AttrMultiprocessorCount         = C.KV_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	AttrPCIBusID                    = C.KV_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID
	AttrPCIDeviceID                 = C.KV_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID
	AttrAsyncEngineCount            = C.KV_CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT
	AttrUnifiedAddressing           = C.KV_CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
	AttrPCIDomainID                 = C.KV_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID
	AttrComputeCapMajor             = C.KV_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapMinor             = C.KV_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	AttrCanUseStreamMemOps          = C.KV_CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1
	AttrGPUDirectRDMASupport        = C.KV_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
	AttrDMABufSupported             = C.KV_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
	AttrGPUDirectRDMAWritesOrdering = C.KV_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING

	// GPUDirectRDMAWritesOrderingNone is the ordering attribute's value
	// where the device orders no GPUDirect RDMA writes: readers must flush.
	GPUDirectRDMAWritesOrderingNone = C.KV_CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE
)

// Copy directions and ways of issuing a plan.
const (
	H2D      = C.KV_H2D
	D2H      = C.KV_D2H
	D2D      = C.KV_D2D
	PerCopy  = C.KV_PERCOPY
	BatchAPI = C.KV_BATCH
)

// A Status is the outcome of one shim call: Code 0, a raw CUresult or a
// Code* loader code; Name is the CUresult's name where the loader could
// ask, Msg the loader's detail (paths tried, dlerror).
type Status = shim.Status

func status(rc C.int, e *C.kv_cuda_err) Status { return shim.Check(int(rc), unsafe.Pointer(e)) }

// A Lib is one loaded libcuda. It is never unloaded.
type Lib struct {
	*shim.Lib[C.kv_cuda]
	Version int // cuDriverGetVersion, e.g. 12080
}

// Load opens the driver at path ("" for libcuda.so.1), resolves its
// functions and runs cuInit. Each call loads anew; callers cache.
func Load(path string) (*Lib, Status) {
	l, st := shim.Load(path, func(p, e unsafe.Pointer) *C.kv_cuda {
		return C.kv_cuda_load((*C.char)(p), (*C.kv_cuda_err)(e))
	})
	if l == nil {
		return nil, st
	}
	return &Lib{Lib: l, Version: int(l.T.driver_version)}, st
}

// Has reports whether the driver provided the named function (its base
// name in cudawrap.h).
func (l *Lib) Has(name string) bool {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return C.kv_cuda_has(l.T, cs) != 0
}

// ErrorName returns the driver's name and description of a CUresult.
func (l *Lib) ErrorName(code int) (name, desc string) {
	var n, s *C.char
	C.kv_cuda_error_name(l.T, C.int(code), &n, &s)
	if n != nil {
		name = C.GoString(n)
	}
	if s != nil {
		desc = C.GoString(s)
	}
	return name, desc
}

// SetCtxFunc is the loaded cuCtxSetCurrent, for another shim that must
// make a context current in the same C call as its own work.
func (l *Lib) SetCtxFunc() unsafe.Pointer { return unsafe.Pointer(C.kv_cuda_set_ctx(l.T)) }

// DeviceCount is cuDeviceGetCount.
func (l *Lib) DeviceCount() (int, Status) {
	var n C.int
	var e C.kv_cuda_err
	st := status(C.kv_cuda_device_count(l.T, &n, &e), &e)
	return int(n), st
}

// DeviceInfo returns a device's name, PCI bus id and memory size.
func (l *Lib) DeviceInfo(ordinal int) (name, bus string, total int64, st Status) {
	var cname [256]C.char
	var cbus [64]C.char
	var t C.size_t
	var e C.kv_cuda_err
	rc := C.kv_cuda_device_info(l.T, C.int(ordinal), &cname[0], C.int(len(cname)), &cbus[0], C.int(len(cbus)), &t, &e)
	if st = status(rc, &e); !st.OK() {
		return "", "", 0, st
	}
	return C.GoString(&cname[0]), C.GoString(&cbus[0]), int64(t), st
}

// DeviceAttr reads one device attribute.
func (l *Lib) DeviceAttr(ordinal, attr int) (int, Status) {
	var v C.int
	var e C.kv_cuda_err
	st := status(C.kv_cuda_device_attr(l.T, C.int(ordinal), C.int(attr), &v, &e), &e)
	return int(v), st
}

// CtxRetain retains device ordinal's primary context.
func (l *Lib) CtxRetain(ordinal int) (Ctx, Status) {
	var c C.CUcontext
	var e C.kv_cuda_err
	st := status(C.kv_cuda_ctx_retain(l.T, C.int(ordinal), &c, &e), &e)
	return Ctx(unsafe.Pointer(c)), st
}

// CtxRelease releases device ordinal's primary context.
func (l *Lib) CtxRelease(ordinal int) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_ctx_release(l.T, C.int(ordinal), &e), &e)
}

func cctx(c Ctx) C.CUcontext { return C.CUcontext(unsafe.Pointer(c)) }

// MemInfo is cuMemGetInfo in context c.
func (l *Lib) MemInfo(c Ctx) (free, total int64, st Status) {
	var f, t C.size_t
	var e C.kv_cuda_err
	st = status(C.kv_cuda_mem_info(l.T, cctx(c), &f, &t, &e), &e)
	return int64(f), int64(t), st
}

// MemAlloc is cuMemAlloc in context c.
func (l *Lib) MemAlloc(c Ctx, size int64) (uint64, Status) {
	var p C.CUdeviceptr
	var e C.kv_cuda_err
	st := status(C.kv_cuda_mem_alloc(l.T, cctx(c), C.size_t(size), &p, &e), &e)
	return uint64(p), st
}

// MemFree is cuMemFree in context c.
func (l *Lib) MemFree(c Ctx, p uint64) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_mem_free(l.T, cctx(c), C.CUdeviceptr(p), &e), &e)
}

// AddressRange is cuMemGetAddressRange: the allocation holding p.
func (l *Lib) AddressRange(c Ctx, p uint64) (base uint64, size int64, st Status) {
	var b C.CUdeviceptr
	var n C.size_t
	var e C.kv_cuda_err
	st = status(C.kv_cuda_addr_range(l.T, cctx(c), C.CUdeviceptr(p), &b, &n, &e), &e)
	return uint64(b), int64(n), st
}

// HostAlloc is cuMemHostAlloc in context c.
func (l *Lib) HostAlloc(c Ctx, size int64, flags int) (unsafe.Pointer, Status) {
	var p unsafe.Pointer
	var e C.kv_cuda_err
	st := status(C.kv_cuda_host_alloc(l.T, cctx(c), C.size_t(size), C.uint(flags), &p, &e), &e)
	return p, st
}

// HostFree is cuMemFreeHost.
func (l *Lib) HostFree(c Ctx, p unsafe.Pointer) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_host_free(l.T, cctx(c), p, &e), &e)
}

// HostRegister is cuMemHostRegister of memory outside the Go heap.
func (l *Lib) HostRegister(c Ctx, p unsafe.Pointer, size int64, flags int) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_host_register(l.T, cctx(c), p, C.size_t(size), C.uint(flags), &e), &e)
}

// HostUnregister is cuMemHostUnregister.
func (l *Lib) HostUnregister(c Ctx, p unsafe.Pointer) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_host_unregister(l.T, cctx(c), p, &e), &e)
}

// HostDevicePtr is cuMemHostGetDevicePointer.
func (l *Lib) HostDevicePtr(c Ctx, p unsafe.Pointer) (uint64, Status) {
	var d C.CUdeviceptr
	var e C.kv_cuda_err
	st := status(C.kv_cuda_host_devptr(l.T, cctx(c), p, &d, &e), &e)
	return uint64(d), st
}

// HtoD copies src to device address dst, synchronously. src may be Go
// memory: the shim keeps nothing after the call.
func (l *Lib) HtoD(c Ctx, dst uint64, src []byte) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_htod(l.T, cctx(c), C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src)), &e), &e)
}

// DtoH copies device address src into dst, synchronously.
func (l *Lib) DtoH(c Ctx, dst []byte, src uint64) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_dtoh(l.T, cctx(c), unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst)), &e), &e)
}

// DMABuf exports [p, p+size) as a DMA-BUF file descriptor.
func (l *Lib) DMABuf(c Ctx, p uint64, size int64) (int, Status) {
	var fd C.int
	var e C.kv_cuda_err
	st := status(C.kv_cuda_dmabuf(l.T, cctx(c), C.CUdeviceptr(p), C.size_t(size), &fd, &e), &e)
	return int(fd), st
}

// FlushGPUDirect is cuFlushGPUDirectRDMAWrites in context c: the NIC's
// GPUDirect RDMA writes so far become visible to c's later work.
func (l *Lib) FlushGPUDirect(c Ctx) Status {
	var e C.kv_cuda_err
	return status(C.kv_cuda_flush_gdr(l.T, cctx(c), &e), &e)
}
