// Package cublaswrap is the cgo binding of kvtier's cuBLAS shim
// (cublaswrap.c in this directory): it loads libcublas at run time and
// runs bf16 GEMMs. Every call that touches a handle makes the handle's
// CUDA context current in the same C call. Package cuda is the API to
// use.
package cublaswrap

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "cublaswrap.h"
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/kvtier/kvtier/csrc/shim"
)

// A Status is the outcome of one shim call: Code 0, a raw cublasStatus_t
// (or the CUresult of cuCtxSetCurrent when Op says so), or a loader code.
type Status = shim.Status

func status(rc C.int, e *C.kv_cublas_err) Status { return shim.Check(int(rc), unsafe.Pointer(e)) }

// A Lib is one loaded libcublas. It is never unloaded.
type Lib struct{ *shim.Lib[C.kv_cublas] }

// Load opens the library at path (a file or a soname) and resolves its
// symbols. Each call loads anew; callers cache.
func Load(path string) (*Lib, Status) {
	l, st := shim.Load(path, func(p, e unsafe.Pointer) *C.kv_cublas {
		return C.kv_cublas_load((*C.char)(p), (*C.kv_cublas_err)(e))
	})
	if l == nil {
		return nil, st
	}
	return &Lib{l}, st
}

// Preload opens the library at path and keeps it open (libcublasLt
// beside a libcublas that is not on the loader's path: libcublas then
// finds it by its soname).
func Preload(path string) Status {
	cpath, free := shim.CString(path)
	defer free()
	var e C.kv_cublas_err
	return status(C.kv_cublas_preload((*C.char)(cpath), &e), &e)
}

// StatusName is cublasGetStatusName, "" where the library lacks it.
func (l *Lib) StatusName(code int) string {
	if n := C.kv_cublas_status_name(l.T, C.int(code)); n != nil {
		return C.GoString(n)
	}
	return ""
}

// A Handle is a cuBLAS handle with the context it was created in.
type Handle struct {
	h *C.kv_blas_handle
}

// Create makes ctx current through setCtx (the driver's cuCtxSetCurrent),
// creates a handle bound to stream and returns cuBLAS's version, all in
// one C call.
func (l *Lib) Create(setCtx, ctx, stream unsafe.Pointer) (*Handle, int, Status) {
	var h *C.kv_blas_handle
	var v C.int
	var e C.kv_cublas_err
	st := status(C.kv_cublas_create(l.T, C.kv_blas_set_ctx_fn(setCtx), ctx, C.kv_blas_stream(stream), &h, &v, &e), &e)
	if !st.OK() {
		return nil, 0, st
	}
	return &Handle{h: h}, int(v), st
}

// Destroy destroys the handle in its context.
func (l *Lib) Destroy(h *Handle) Status {
	var e C.kv_cublas_err
	return status(C.kv_cublas_destroy(l.T, h.h, &e), &e)
}

// A Gemm is C[M×N] = A[M×K]·B[K×N], row-major bf16, Batch times over
// consecutive matrices; A, B and C are device pointers.
type Gemm struct {
	M, N, K, Batch int
	A, B, C        uint64
}

// Gemms issues ops on the handle's stream in its context and returns how
// many were issued before an error.
func (l *Lib) Gemms(h *Handle, ops []Gemm) (int, Status, error) {
	arr := (*C.kv_gemm)(C.calloc(C.size_t(len(ops)), C.size_t(unsafe.Sizeof(C.kv_gemm{}))))
	if arr == nil {
		return 0, Status{}, errors.New("cuda: out of memory for gemm list")
	}
	defer C.free(unsafe.Pointer(arr))
	cs := unsafe.Slice(arr, len(ops))
	for i, g := range ops {
		cs[i] = C.kv_gemm{m: C.int(g.M), n: C.int(g.N), k: C.int(g.K), batch: C.int(max(g.Batch, 1)),
			a: C.uint64_t(g.A), b: C.uint64_t(g.B), c: C.uint64_t(g.C)}
	}
	var done C.size_t
	var e C.kv_cublas_err
	st := status(C.kv_cublas_gemms(l.T, h.h, arr, C.size_t(len(ops)), &done, &e), &e)
	return int(done), st, nil
}
