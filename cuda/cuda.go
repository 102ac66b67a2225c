// Package cuda drives an NVIDIA GPU through the CUDA driver API, loaded at
// run time: libcuda.so.1 is dlopen'd by the C shim in csrc/cudawrap.c
// (linked into this directory so cgo compiles it and the build cache sees
// its edits) and
// every driver function is resolved through cuGetProcAddress at an
// explicit ABI version, so kvtier builds without the CUDA toolkit and runs
// where no driver is installed (Load then returns ErrNoDriver).
//
// The package holds devices and their attributes, the primary context,
// streams, events, device and host memory, copy plans (one cgo call per
// plan: per-copy, cuMemcpyBatchAsync or one contiguous copy), a sample
// timer that holds a stream until its work is queued, cuBLAS bf16 GEMMs
// (csrc/cublaswrap.c) and the "gpu" manifest collector (NVML).
//
// Errors are *Error values naming the driver call and its CUresult;
// errors.Is(err, ErrUnsupported) tells a missing optional driver feature
// and errors.Is(err, ErrNoDriver) a missing library.
//
// Go moves goroutines between threads and a CUDA context is current per
// thread, so every shim call that needs the context makes it current
// first.
package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "cudawrap.h"
#include "cublaswrap.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// ErrNoDriver is matched by errors.Is when libcuda (or libcublas) cannot
// be opened or lacks a required function.
var ErrNoDriver = errors.New("no CUDA driver")

// ErrUnsupported is matched by errors.Is when the driver or device lacks
// an optional feature (cuMemcpyBatchAsync, stream memory operations,
// DMA-BUF export).
var ErrUnsupported = errors.New("not supported by this driver or device")

// Loader codes in Error.Code, outside the CUresult range.
const (
	codeNoLibrary   = C.KV_ERR_NO_LIBRARY
	codeNoSymbol    = C.KV_ERR_NO_SYMBOL
	codeUnsupported = C.KV_ERR_UNSUPPORTED
	codeNoMemory    = C.KV_ERR_NO_MEMORY

	cudaErrorNotSupported = 801
)

// An Error is a failed driver (or cuBLAS) call.
type Error struct {
	Op   string // the driver function or loader step, e.g. "cuMemAlloc"
	Code int    // raw CUresult / cublasStatus_t; negative for loader errors
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"; "" when unknown
	Msg  string // the driver's description or the loader's detail
}

// Error names the driver call (or loader step), the status and the
// driver's description.
func (e *Error) Error() string {
	switch e.Code {
	case codeNoLibrary, codeNoSymbol:
		return "cuda: " + e.Msg
	case codeUnsupported:
		return fmt.Sprintf("cuda: %s: %v", e.Op, ErrUnsupported)
	}
	s := fmt.Sprintf("cuda: %s: ", e.Op)
	if e.Name != "" {
		s += fmt.Sprintf("%s (%d)", e.Name, e.Code)
	} else {
		s += fmt.Sprintf("error %d", e.Code)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Is matches ErrNoDriver and ErrUnsupported.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNoDriver:
		return e.Code == codeNoLibrary || e.Code == codeNoSymbol
	case ErrUnsupported:
		return e.Code == codeUnsupported || e.Code == cudaErrorNotSupported
	}
	return false
}

// A Driver is one loaded libcuda.
type Driver struct {
	l       *C.kv_cuda
	Path    string // what dlopen opened
	Version int    // cuDriverGetVersion, e.g. 12080
}

var loaded struct {
	once sync.Once
	d    *Driver
	err  error
}

// Load opens the process's driver once: $KVTIER_LIBCUDA if set, else
// libcuda.so.1. Later calls return the same driver or error.
func Load() (*Driver, error) {
	loaded.once.Do(func() {
		loaded.d, loaded.err = Open(os.Getenv("KVTIER_LIBCUDA"))
	})
	return loaded.d, loaded.err
}

// Open loads the driver library at path ("" for libcuda.so.1) and
// initialises it. Each call loads its own copy; most callers want Load.
func Open(path string) (*Driver, error) {
	var cpath *C.char
	if path != "" {
		cpath = C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
	}
	var e C.kv_cuda_err
	l := C.kv_cuda_load(cpath, &e)
	if l == nil {
		return nil, &Error{Op: C.GoString(e.op), Code: int(e.code), Name: C.GoString(&e.name[0]), Msg: C.GoString(&e.msg[0])}
	}
	return &Driver{l: l, Path: C.GoString(&l.path[0]), Version: int(l.driver_version)}, nil
}

// Close unloads a driver from Open. Everything made from it must be
// released first.
func (d *Driver) Close() error {
	if d.l != nil {
		C.kv_cuda_unload(d.l)
		d.l = nil
	}
	return nil
}

// VersionString formats the driver's CUDA version, e.g. "12.8".
func (d *Driver) VersionString() string { return FormatVersion(d.Version) }

// FormatVersion formats a CUDA version number (12080 → "12.8").
func FormatVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// Has reports whether the driver provided the named function (by the base
// name in csrc/cudawrap.h, e.g. "cuMemcpyBatchAsync").
func (d *Driver) Has(name string) bool {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return C.kv_cuda_has(d.l, cs) != 0
}

// err turns a shim status into an *Error, nil for success.
func (d *Driver) err(rc C.int, e *C.kv_cuda_err) error {
	if rc == 0 {
		return nil
	}
	err := &Error{Op: C.GoString(e.op), Code: int(e.code)}
	if err.Code > 0 {
		var name, str *C.char
		C.kv_cuda_error_name(d.l, C.int(err.Code), &name, &str)
		if name != nil {
			err.Name = C.GoString(name)
		}
		if str != nil {
			err.Msg = C.GoString(str)
		}
	}
	return err
}
