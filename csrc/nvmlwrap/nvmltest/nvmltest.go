// Package nvmltest builds the fake libnvidia-ml kept beside it
// (fakenvml.c.src) for tests, with the system C compiler, so the NVML
// shim and package system's GPU listing are tested on machines without
// NVIDIA's driver. Each Build is a fresh copy of the library (a new file,
// so dlopen loads a new instance), so the failures one test asks of it do
// not leak into others.
//
// The fake knows two GPUs: "NVIDIA H20" at 00000000:19:00.0 and
// 00000000:3B:00.0, 102,625,181,696 bytes each, PCIe gen4 x16 under a
// gen5 x16 maximum, SM clock 1755 MHz (max 1980), memory clock 2619 MHz,
// MIG off on the first and on on the second; driver 550.54.15, CUDA
// 12.8.
package nvmltest

/*
#include <stdlib.h>

static void call_fail(void *f, const char *s, int code) { ((void (*)(const char *, int))f)(s, code); }
static int call_inits(void *f) { return ((int (*)(void))f)(); }
*/
import "C"

import (
	_ "embed"
	"testing"
	"unsafe"

	"github.com/kvtier/kvtier/internal/fakelib"
)

//go:embed fakenvml.c.src
var fakeNVML []byte

// Build returns the path of a fresh copy of the fake libnvidia-ml in a new
// temporary directory (compiled once). The test is skipped when there is
// no C compiler.
func Build(t testing.TB) string {
	t.Helper()
	return fakelib.Path(t, fakelib.Lib{Name: "libnvidia-ml.so.1", Source: fakeNVML, Flags: []string{"-Werror"}})
}

// Fail makes every later call of sym (an exported name, such as
// "nvmlInit_v2") in the loaded fake at lib answer code, an
// nvmlReturn_t; code 0 clears it.
func Fail(t testing.TB, lib, sym string, code int) {
	t.Helper()
	cs := C.CString(sym)
	defer C.free(unsafe.Pointer(cs))
	C.call_fail(fakelib.Sym(t, lib, "fakenvml_fail"), cs, C.int(code))
}

// Inits returns the loaded fake's nvmlInit_v2 calls not yet shut down.
func Inits(t testing.TB, lib string) int {
	t.Helper()
	return int(C.call_inits(fakelib.Sym(t, lib, "fakenvml_inits")))
}
