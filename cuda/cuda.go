// Package cuda drives an NVIDIA GPU through the CUDA driver API, loaded at
// run time by the C shim in csrc/cudawrap: libcuda.so.1 is dlopen'd and
// every driver function is resolved through cuGetProcAddress at an
// explicit ABI version, so kvtier builds without the CUDA toolkit and runs
// where no driver is installed (Open then returns ErrNoDriver).
//
// The package holds devices and their attributes, the primary context,
// streams, events, device and host memory, copy plans (one cgo call per
// plan: per-copy, cuMemcpyBatchAsync or one contiguous copy), a sample
// timer that holds a stream until its work is queued, and cuBLAS bf16
// GEMMs (csrc/cublaswrap).
//
// Libraries are loaded once per path for the life of the process and
// never unloaded: Open and OpenBLAS return the same value for the same
// path. The path is the caller's configuration; nothing here reads the
// environment.
//
// Errors are *Error values naming the driver call and its CUresult;
// errors.Is(err, ErrUnsupported) tells a missing optional driver feature
// and errors.Is(err, ErrNoDriver) a missing library.
//
// Go moves goroutines between threads and a CUDA context is current per
// thread, so every shim call that needs the context makes it current
// first, in the same C call (cuBLAS calls included).
package cuda

import (
	"errors"
	"fmt"

	"github.com/kvtier/kvtier/csrc/cudawrap"
	"github.com/kvtier/kvtier/csrc/shim"
	"github.com/kvtier/kvtier/internal/native"
)

// ErrNoDriver is matched by errors.Is when libcuda (or libcublas) cannot
// be opened or lacks a required function.
var ErrNoDriver = errors.New("no CUDA driver")

// ErrUnsupported is matched by errors.Is when the driver or device lacks
// an optional feature (cuMemcpyBatchAsync, stream memory operations,
// DMA-BUF export).
var ErrUnsupported = errors.New("not supported by this driver or device")

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
	case shim.CodeNoLibrary, shim.CodeNoSymbol:
		return "cuda: " + e.Msg
	case shim.CodeUnsupported:
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
		return e.Code == shim.CodeNoLibrary || e.Code == shim.CodeNoSymbol
	case ErrUnsupported:
		return e.Code == shim.CodeUnsupported || e.Code == cudawrap.ErrorNotSupported
	}
	return false
}

// A Driver is one loaded libcuda.
type Driver struct {
	l       *cudawrap.Lib
	Path    string // what dlopen opened
	Version int    // cuDriverGetVersion, e.g. 12080
}

// drivers and blas hold every load by the path asked for, failures
// included.
var (
	drivers native.Cache[*Driver]
	blas    native.Cache[*BLAS]
)

// Open returns the driver at path ("" for libcuda.so.1), initialised.
// The library is loaded once per path for the life of the process: later
// calls with the same path return the same driver, or the same error.
func Open(path string) (*Driver, error) {
	return drivers.Load(path, func(path string) (*Driver, error) {
		l, st := cudawrap.Load(path)
		if !st.OK() {
			return nil, &Error{Op: st.Op, Code: st.Code, Name: st.Name, Msg: st.Msg}
		}
		return &Driver{l: l, Path: l.Path, Version: l.Version}, nil
	})
}

// VersionString formats the driver's CUDA version, e.g. "12.8".
func (d *Driver) VersionString() string { return FormatVersion(d.Version) }

// FormatVersion formats a CUDA version number (12080 → "12.8").
func FormatVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// Has reports whether the driver provided the named function (by the base
// name in csrc/cudawrap/cudawrap.h, e.g. "cuMemcpyBatchAsync").
func (d *Driver) Has(name string) bool { return d.l.Has(name) }

// err turns a shim status into an *Error, nil for success.
func (d *Driver) err(st cudawrap.Status) error {
	if st.OK() {
		return nil
	}
	err := &Error{Op: st.Op, Code: st.Code, Name: st.Name, Msg: st.Msg}
	if err.Code > 0 {
		err.Name, err.Msg = d.l.ErrorName(err.Code)
	}
	return err
}
