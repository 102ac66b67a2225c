package cuda

/*
#include <stdlib.h>
#include "cudawrap.h"
#include "cublaswrap.h"

static int kv_blas_ctx(kv_cuda *L, CUcontext ctx, kv_cublas_err *e)
{
	CUresult r = L->cuCtxSetCurrent(ctx);
	if (r != 0) {
		e->op = "cuCtxSetCurrent";
		e->code = r;
	}
	return r;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// BLAS is a loaded libcublas.
type BLAS struct {
	b    *C.kv_cublas
	Path string
}

var loadedBLAS struct {
	once sync.Once
	b    *BLAS
	err  error
}

// LoadBLAS opens libcublas once: $KVTIER_LIBCUBLAS if set, else
// libcublas.so.13, .12, .11.
func LoadBLAS() (*BLAS, error) {
	loadedBLAS.once.Do(func() {
		loadedBLAS.b, loadedBLAS.err = OpenBLAS(os.Getenv("KVTIER_LIBCUBLAS"))
	})
	return loadedBLAS.b, loadedBLAS.err
}

// OpenBLAS loads the cuBLAS library at path ("" for the usual sonames).
// Each call loads its own copy; most callers want LoadBLAS.
func OpenBLAS(path string) (*BLAS, error) {
	var cpath *C.char
	if path != "" {
		cpath = C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
	}
	var e C.kv_cublas_err
	b := C.kv_cublas_load(cpath, &e)
	if b == nil {
		return nil, &Error{Op: C.GoString(e.op), Code: int(e.code), Msg: C.GoString(&e.msg[0])}
	}
	return &BLAS{b: b, Path: C.GoString(&b.path[0])}, nil
}

// Close unloads a library from OpenBLAS; its handles must be gone.
func (b *BLAS) Close() error {
	if b.b != nil {
		C.kv_cublas_unload(b.b)
		b.b = nil
	}
	return nil
}

func (b *BLAS) err(rc C.int, e *C.kv_cublas_err) error {
	if rc == 0 {
		return nil
	}
	err := &Error{Op: C.GoString(e.op), Code: int(e.code)}
	if n := C.kv_cublas_status_name(b.b, e.code); n != nil && err.Op != "cuCtxSetCurrent" {
		err.Name = C.GoString(n)
	}
	return err
}

// A Handle is a cuBLAS handle bound to a stream.
type Handle struct {
	b       *BLAS
	s       *Stream
	h       C.cublasHandle_t
	Version int // cublasGetVersion, e.g. 120900
}

// NewHandle creates a cuBLAS handle on s's context that issues its work
// on s.
func (b *BLAS) NewHandle(s *Stream) (*Handle, error) {
	var e C.kv_cublas_err
	c := s.c
	if err := b.err(C.kv_blas_ctx(c.d.l, c.ctx, &e), &e); err != nil {
		return nil, err
	}
	var h C.cublasHandle_t
	var v C.int
	if err := b.err(C.kv_cublas_create(b.b, &h, C.kv_blas_stream(unsafe.Pointer(s.s)), &v, &e), &e); err != nil {
		return nil, err
	}
	return &Handle{b: b, s: s, h: h, Version: int(v)}, nil
}

// Destroy releases the handle.
func (h *Handle) Destroy() error {
	if h.h == nil {
		return nil
	}
	var e C.kv_cublas_err
	c := h.s.c
	if err := h.b.err(C.kv_blas_ctx(c.d.l, c.ctx, &e), &e); err != nil {
		return err
	}
	x := h.h
	h.h = nil
	return h.b.err(C.kv_cublas_destroy(h.b.b, x, &e), &e)
}

// A Gemm is C[M×N] = A[M×K]·B[K×N] in row-major bf16 with fp32
// accumulation, Batch times over consecutive matrices (strided batch);
// A, B and C are device pointers.
type Gemm struct {
	M, N, K, Batch int
	A, B, C        uint64
}

// Gemms issues ops on the handle's stream in one cgo call and returns
// how many were issued before an error.
func (h *Handle) Gemms(ops []Gemm) (int, error) {
	if len(ops) == 0 {
		return 0, nil
	}
	for _, g := range ops {
		if g.M <= 0 || g.N <= 0 || g.K <= 0 {
			return 0, fmt.Errorf("cuda: gemm %dx%dx%d", g.M, g.N, g.K)
		}
	}
	arr := (*C.kv_gemm)(C.calloc(C.size_t(len(ops)), C.size_t(unsafe.Sizeof(C.kv_gemm{}))))
	if arr == nil {
		return 0, errors.New("cuda: out of memory for gemm list")
	}
	defer C.free(unsafe.Pointer(arr))
	cs := unsafe.Slice(arr, len(ops))
	for i, g := range ops {
		cs[i] = C.kv_gemm{m: C.int(g.M), n: C.int(g.N), k: C.int(g.K), batch: C.int(max(g.Batch, 1)),
			a: C.uint64_t(g.A), b: C.uint64_t(g.B), c: C.uint64_t(g.C)}
	}
	var e C.kv_cublas_err
	c := h.s.c
	if err := h.b.err(C.kv_blas_ctx(c.d.l, c.ctx, &e), &e); err != nil {
		return 0, err
	}
	var done C.size_t
	if err := h.b.err(C.kv_cublas_gemms(h.b.b, h.h, arr, C.size_t(len(ops)), &done, &e), &e); err != nil {
		return int(done), fmt.Errorf("gemm %d of %d: %w", int(done), len(ops), err)
	}
	return len(ops), nil
}
