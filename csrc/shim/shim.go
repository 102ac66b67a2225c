// Package shim holds what kvtier's C shims share: shim.h (the error a
// shim call fills, the head of a shim's table and the loader) and, on the
// Go side, the Status every binding returns and the conversions to it.
//
// A binding (cudawrap, cufilewrap, ...) passes the address of its
// kv_shim_err as an unsafe.Pointer: the struct is shim.h's in every
// package, so one conversion serves them all.
package shim

/*
#include "shim.h"
*/
import "C"

import "unsafe"

// Loader codes in Status.Code, outside every library's own codes.
const (
	CodeNoLibrary   = C.KV_SHIM_ERR_NO_LIBRARY
	CodeNoSymbol    = C.KV_SHIM_ERR_NO_SYMBOL
	CodeUnsupported = C.KV_SHIM_ERR_UNSUPPORTED
	CodeNoMemory    = C.KV_SHIM_ERR_NO_MEMORY
)

// A Status is the outcome of one shim call. Only the fields that apply to
// a shim are set.
type Status struct {
	Op       string // the native function or shim step that failed
	Code     int    // 0, the library's code, or a shim's code
	Name     string // the code's name where the shim could ask
	Msg      string // detail: paths tried, dlerror, the library's text
	Errno    int    // errno of a failed system call, 0 if none
	CUErr    int    // a CUresult under another library's code
	WCStatus int    // enum ibv_wc_status of a failed completion
	Index    int    // the request that failed; -1 if none
	Got      int64  // what a short read or write returned
}

// OK reports success.
func (s Status) OK() bool { return s.Code == 0 }

// Check is the Status of a shim call that returned rc and filled the
// kv_shim_err at e: the zero Status where rc is 0.
func Check(rc int, e unsafe.Pointer) Status {
	if rc == 0 {
		return Status{}
	}
	return Failure(e)
}

// Failure is the Status the shim left in the kv_shim_err at e.
func Failure(e unsafe.Pointer) Status {
	c := (*C.kv_shim_err)(e)
	return Status{Op: C.GoString(c.op), Code: int(c.code), Name: C.GoString(&c.name[0]), Msg: C.GoString(&c.msg[0]),
		Errno: int(c.sys_errno), CUErr: int(c.cu_err), WCStatus: int(c.wc_status), Index: int(c.index),
		Got: int64(c.res)}
}

// A Lib is one loaded library: the shim's table T (headed by shim.h's
// kv_shim_lib) and the path that opened it. It is never unloaded.
type Lib[T any] struct {
	T    *T
	Path string // what dlopen opened
}

// Load runs load, a shim's loader, with path as a C string (nil for "",
// the shim's default names) and a kv_shim_err, and returns the library it
// loaded, or nil and the Status of its failure.
func Load[T any](path string, load func(cpath, e unsafe.Pointer) *T) (*Lib[T], Status) {
	var cpath *C.char
	if path != "" {
		cpath = C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
	}
	var e C.kv_shim_err
	t := load(unsafe.Pointer(cpath), unsafe.Pointer(&e))
	if t == nil {
		return nil, Failure(unsafe.Pointer(&e))
	}
	return &Lib[T]{T: t, Path: C.GoString(&(*C.kv_shim_lib)(unsafe.Pointer(t)).path[0])}, Status{}
}

// CString is s in C memory, and the function that frees it.
func CString(s string) (unsafe.Pointer, func()) {
	p := C.CString(s)
	return unsafe.Pointer(p), func() { C.free(unsafe.Pointer(p)) }
}
