// Package cufilewrap is the cgo binding of kvtier's cuFile shim
// (cufilewrap.c in this directory): it loads libcufile (GPUDirect
// Storage) at run time and calls the shim's functions with Go types. It
// holds no policy; package diskio is the API to use.
//
// Every call returns a Status whose Code is 0 on success, else a
// CUfileOpError (5001...) or a negative shim code, with the cuFile
// function that failed.
package cufilewrap

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "cufilewrap.h"
*/
import "C"

import (
	"unsafe"

	"github.com/kvtier/kvtier/csrc/shim"
)

// Shim codes in Status.Code, outside cuFile's and package shim's loader
// codes, and the cuFile codes callers name.
const (
	CodeContext = C.KV_CUFILE_ERR_CONTEXT // making the CUDA context current failed; CUErr says how
	CodeErrno   = C.KV_CUFILE_ERR_ERRNO   // cuFileRead or cuFileWrite returned -1; Errno says why
	CodeShort   = C.KV_CUFILE_ERR_SHORT   // cuFileRead or cuFileWrite moved fewer bytes than asked

	DriverNotInitialized = C.KV_CU_FILE_DRIVER_NOT_INITIALIZED
	CUDADriverError      = C.KV_CU_FILE_CUDA_DRIVER_ERROR
)

// A Status is the outcome of one shim call: Op the cuFile function or
// shim step that failed; Code 0, a CUfileOpError or a Code* shim code;
// CUErr the CUresult of a CUDA driver error; Errno the errno of
// CodeErrno; Index the request of a failed read or write (-1 else); Got
// the bytes a short read or write returned; Msg the loader's detail.
type Status = shim.Status

func status(rc C.int, e *C.kv_cufile_err) Status { return shim.Check(int(rc), unsafe.Pointer(e)) }

// A Ctx is what makes the caller's CUDA context current in a cuFile
// call: the loaded cuCtxSetCurrent and the CUcontext (a driver handle,
// passed as an integer). The zero Ctx makes nothing current.
type Ctx struct {
	SetCurrent unsafe.Pointer
	Ctx        uintptr
}

func (c Ctx) set() C.kv_cufile_set_ctx_fn { return C.kv_cufile_set_ctx_fn(c.SetCurrent) }

// A Lib is one loaded libcufile. It is never unloaded.
type Lib struct {
	*shim.Lib[C.kv_cufile]
	Close string // the cuFileDriverClose symbol that resolved
}

// Load opens libcufile at path ("" for libcufile.so.0, then libcufile.so)
// and resolves its functions.
func Load(path string) (*Lib, Status) {
	l, st := shim.Load(path, func(p, e unsafe.Pointer) *C.kv_cufile {
		return C.kv_cufile_load((*C.char)(p), (*C.kv_cufile_err)(e))
	})
	if l == nil {
		return nil, st
	}
	return &Lib{Lib: l, Close: C.GoString(&l.T.close_symbol[0])}, st
}

// DriverOpen is cuFileDriverOpen with c current.
func (l *Lib) DriverOpen(c Ctx) Status {
	var e C.kv_cufile_err
	return status(C.kv_cufile_driver_open(l.T, c.set(), C.uint64_t(c.Ctx), &e), &e)
}

// DriverClose is cuFileDriverClose (its _v2 where the library has it).
func (l *Lib) DriverClose() Status {
	var e C.kv_cufile_err
	return status(C.kv_cufile_driver_close(l.T, &e), &e)
}

// DriverProps are the nvidia-fs facts of cuFileDriverGetProperties: the
// nvidia-fs version cuFile uses (0.0 where it uses none: its POSIX
// compatibility mode) and the driver's status and control flags.
type DriverProps struct {
	Major, Minor uint32
	Status       uint32 // dstatusflags: CU_FILE_*_SUPPORTED bits
	Control      uint32 // dcontrolflags: CU_FILE_USE_POLL_MODE, CU_FILE_ALLOW_COMPAT_MODE bits
}

// AllowCompat is CU_FILE_ALLOW_COMPAT_MODE's bit in DriverProps.Control.
const AllowCompat = 1 << C.KV_CU_FILE_ALLOW_COMPAT_MODE

// DriverProps is cuFileDriverGetProperties (after DriverOpen); Code
// shim.CodeUnsupported where the library lacks it.
func (l *Lib) DriverProps() (DriverProps, Status) {
	var major, minor, st, ctl C.unsigned
	var e C.kv_cufile_err
	s := status(C.kv_cufile_driver_props(l.T, &major, &minor, &st, &ctl, &e), &e)
	return DriverProps{uint32(major), uint32(minor), uint32(st), uint32(ctl)}, s
}

// A Handle is a registered file.
type Handle unsafe.Pointer

// HandleRegister registers the file descriptor fd.
func (l *Lib) HandleRegister(fd int) (Handle, Status) {
	var h C.kv_CUfileHandle_t
	var e C.kv_cufile_err
	st := status(C.kv_cufile_handle_register(l.T, C.int(fd), &h, &e), &e)
	return Handle(h), st
}

// HandleDeregister deregisters h.
func (l *Lib) HandleDeregister(h Handle) { C.kv_cufile_handle_deregister(l.T, C.kv_CUfileHandle_t(h)) }

// BufRegister registers n bytes of device memory at addr with c current.
func (l *Lib) BufRegister(c Ctx, addr uintptr, n int64) Status {
	var e C.kv_cufile_err
	return status(C.kv_cufile_buf_register(l.T, c.set(), C.uint64_t(c.Ctx), C.uint64_t(addr), C.size_t(n), &e), &e)
}

// BufDeregister deregisters the device memory at addr with c current.
func (l *Lib) BufDeregister(c Ctx, addr uintptr) Status {
	var e C.kv_cufile_err
	return status(C.kv_cufile_buf_deregister(l.T, c.set(), C.uint64_t(c.Ctx), C.uint64_t(addr), &e), &e)
}

// A Req is one read (Len bytes at file offset Off into the device
// buffer at offset Dst) or one write (Len bytes from the device buffer
// at offset Dst to file offset Off).
type Req struct {
	Off, Dst, Len int64
}

var _ = [1]struct{}{}[unsafe.Sizeof(Req{})-C.sizeof_kv_cufile_req]

// Read reads reqs in order from h into the device memory at base with c
// current; the first that fails or reads short ends it.
func (l *Lib) Read(c Ctx, h Handle, base uintptr, reqs []Req) Status {
	return l.io(c, h, base, reqs, 0)
}

// Write writes reqs in order from the device memory at base to h with c
// current; the first that fails or writes short ends it.
func (l *Lib) Write(c Ctx, h Handle, base uintptr, reqs []Req) Status {
	return l.io(c, h, base, reqs, 1)
}

// io moves reqs between h and the device memory at base with c current,
// writing them where write is 1 and reading them where it is 0.
func (l *Lib) io(c Ctx, h Handle, base uintptr, reqs []Req, write C.int) Status {
	if len(reqs) == 0 {
		return Status{}
	}
	var e C.kv_cufile_err
	p := (*C.kv_cufile_req)(unsafe.Pointer(unsafe.SliceData(reqs)))
	return status(C.kv_cufile_io(l.T, c.set(), C.uint64_t(c.Ctx), C.kv_CUfileHandle_t(h), C.uint64_t(base), p, C.long(len(reqs)), write, &e), &e)
}
