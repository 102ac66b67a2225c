// Package nvmlwrap is the cgo binding of kvtier's NVML shim (nvmlwrap.c
// in this directory): it loads libnvidia-ml at run time, without NVIDIA's
// header, and reads what kvtier lists of each GPU. It holds no policy;
// package system is the API to use.
//
// Every call that fails returns an *Error naming the NVML function, its
// nvmlReturn_t (or a negative loader code) and NVML's message.
package nvmlwrap

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "nvmlwrap.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/kvtier/kvtier/csrc/shim"
)

// Codes in Error.Code: NVML's that callers name. The loader's are
// package shim's.
const (
	Success          = C.KV_NVML_SUCCESS
	ErrUninitialized = C.KV_NVML_ERROR_UNINITIALIZED
	ErrNotSupported  = C.KV_NVML_ERROR_NOT_SUPPORTED
	ErrNotFound      = C.KV_NVML_ERROR_NOT_FOUND
	ErrLibNotFound   = C.KV_NVML_ERROR_LIBRARY_NOT_FOUND
	ErrFuncNotFound  = C.KV_NVML_ERROR_FUNCTION_NOT_FOUND
)

// An Error is a failed NVML call or load.
type Error struct {
	Op   string // the NVML function or loader step
	Code int    // an nvmlReturn_t, or a Code* loader code
	Msg  string // NVML's message, or the loader's detail
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("%s: %s", e.Op, CodeName(e.Code))
	}
	return fmt.Sprintf("%s: %s (%s)", e.Op, CodeName(e.Code), e.Msg)
}

// codeNames are the names go-nvml and NVML's documentation give the codes
// kvtier meets; the loader's codes read as NVML's library-not-found.
var codeNames = map[int]string{
	C.KV_NVML_SUCCESS:                  "SUCCESS",
	C.KV_NVML_ERROR_UNINITIALIZED:      "ERROR_UNINITIALIZED",
	C.KV_NVML_ERROR_INVALID_ARGUMENT:   "ERROR_INVALID_ARGUMENT",
	C.KV_NVML_ERROR_NOT_SUPPORTED:      "ERROR_NOT_SUPPORTED",
	C.KV_NVML_ERROR_NO_PERMISSION:      "ERROR_NO_PERMISSION",
	C.KV_NVML_ERROR_NOT_FOUND:          "ERROR_NOT_FOUND",
	C.KV_NVML_ERROR_INSUFFICIENT_SIZE:  "ERROR_INSUFFICIENT_SIZE",
	C.KV_NVML_ERROR_DRIVER_NOT_LOADED:  "ERROR_DRIVER_NOT_LOADED",
	C.KV_NVML_ERROR_LIBRARY_NOT_FOUND:  "ERROR_LIBRARY_NOT_FOUND",
	C.KV_NVML_ERROR_FUNCTION_NOT_FOUND: "ERROR_FUNCTION_NOT_FOUND",
	C.KV_NVML_ERROR_GPU_IS_LOST:        "ERROR_GPU_IS_LOST",
	C.KV_NVML_ERROR_UNKNOWN:            "ERROR_UNKNOWN",
	shim.CodeNoLibrary:                 "ERROR_LIBRARY_NOT_FOUND",
	shim.CodeNoSymbol:                  "ERROR_FUNCTION_NOT_FOUND",
	shim.CodeNoMemory:                  "ERROR_MEMORY",
}

// CodeName names an nvmlReturn_t or loader code.
func CodeName(code int) string {
	if n, ok := codeNames[code]; ok {
		return n
	}
	return fmt.Sprintf("NVML error %d", code)
}

func failed(rc C.int, e *C.kv_nvml_err) error {
	return errorOf(shim.Check(int(rc), unsafe.Pointer(e)))
}

func errorOf(st shim.Status) error {
	if st.OK() {
		return nil
	}
	return &Error{Op: st.Op, Code: st.Code, Msg: st.Msg}
}

// A Lib is one loaded libnvidia-ml. It is never unloaded.
type Lib struct{ *shim.Lib[C.kv_nvml] }

var (
	mu     sync.Mutex
	loaded = map[string]*Lib{}
)

// Load opens libnvidia-ml at path ("" for libnvidia-ml.so.1), once per
// path and process, and resolves its functions.
func Load(path string) (*Lib, error) {
	mu.Lock()
	defer mu.Unlock()
	if l, ok := loaded[path]; ok {
		return l, nil
	}
	l, st := shim.Load(path, func(p, e unsafe.Pointer) *C.kv_nvml {
		return C.kv_nvml_load((*C.char)(p), (*C.kv_nvml_err)(e))
	})
	if l == nil {
		return nil, errorOf(st)
	}
	lib := &Lib{l}
	loaded[path] = lib
	return lib, nil
}

// Init initializes NVML (nvmlInit_v2); each Init is paired with a
// Shutdown.
func (l *Lib) Init() error {
	var e C.kv_nvml_err
	return failed(C.kv_nvml_init(l.T, &e), &e)
}

// Shutdown releases what Init took (nvmlShutdown).
func (l *Lib) Shutdown() error {
	var e C.kv_nvml_err
	return failed(C.kv_nvml_shutdown(l.T, &e), &e)
}

// Driver returns the driver version ("550.54.15") and the CUDA version
// it supports (12080 for 12.8).
func (l *Lib) Driver() (string, int, error) {
	var buf [C.KV_NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE]C.char
	var cuda C.int
	var e C.kv_nvml_err
	err := failed(C.kv_nvml_driver(l.T, &buf[0], C.uint(len(buf)), &cuda, &e), &e)
	return C.GoString(&buf[0]), int(cuda), err
}

// Count returns the number of GPUs NVML sees.
func (l *Lib) Count() (int, error) {
	var n C.uint
	var e C.kv_nvml_err
	err := failed(C.kv_nvml_count(l.T, &n, &e), &e)
	return int(n), err
}

// A GPU is what kvtier reads of one device; what NVML could not say is
// zero ("" for strings), MIG -1.
type GPU struct {
	Name, UUID                                   string
	BusID                                        string // NVML's form, "00000000:19:00.0"
	MemoryBytes                                  uint64
	PCIeGen, PCIeWidth, PCIeMaxGen, PCIeMaxWidth int
	SMClockMHz, MaxSMClockMHz, MemClockMHz       int
	MIG                                          int // 1 enabled, 0 disabled, -1 unknown
}

func gpuOf(g *C.kv_nvml_gpu) GPU {
	return GPU{
		Name: C.GoString(&g.name[0]), UUID: C.GoString(&g.uuid[0]), BusID: C.GoString(&g.bus_id[0]),
		MemoryBytes: uint64(g.memory_total),
		PCIeGen:     int(g.pcie_gen), PCIeWidth: int(g.pcie_width), PCIeMaxGen: int(g.pcie_max_gen), PCIeMaxWidth: int(g.pcie_max_width),
		SMClockMHz: int(g.sm_clock), MaxSMClockMHz: int(g.max_sm_clock), MemClockMHz: int(g.mem_clock),
		MIG: int(g.mig),
	}
}

// GPU reads the device at index i.
func (l *Lib) GPU(i int) (GPU, error) {
	var g C.kv_nvml_gpu
	var e C.kv_nvml_err
	if err := failed(C.kv_nvml_gpu_at(l.T, C.uint(i), &g, &e), &e); err != nil {
		return GPU{}, err
	}
	return gpuOf(&g), nil
}

// GPUByBusID reads the device at PCI bus id bus, in NVML's form
// ("00000000:19:00.0").
func (l *Lib) GPUByBusID(bus string) (GPU, error) {
	cbus := C.CString(bus)
	defer C.free(unsafe.Pointer(cbus))
	var g C.kv_nvml_gpu
	var e C.kv_nvml_err
	if err := failed(C.kv_nvml_gpu_by_bus(l.T, cbus, &g, &e), &e); err != nil {
		return GPU{}, err
	}
	return gpuOf(&g), nil
}
