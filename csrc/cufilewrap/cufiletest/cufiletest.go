// Package cufiletest builds the fake libcufile kept beside it
// (fakecufile.c.src) for tests, with the system C compiler, so the
// cuFile shim, package diskio's GPUDirect Storage reads and writes and
// the disk tier's gpudirect path are tested on machines without GPUDirect
// Storage. Each Build is a fresh copy of the library (a new file, so
// dlopen loads a new instance), so the failures one test asks of it do
// not leak into others.
package cufiletest

/*
#include <stdlib.h>

static void call_fail(void *f, const char *s, int code) { ((void (*)(const char *, int))f)(s, code); }

static void call_state(void *f, long *o, long *hd, long *b, long *r, long *w)
{
	((void (*)(long *, long *, long *, long *, long *))f)(o, hd, b, r, w);
}

static void call_nvfs(void *f, unsigned major, unsigned minor) { ((void (*)(unsigned, unsigned))f)(major, minor); }

static void *ctx_of(void *f, long *calls) { return ((void *(*)(long *))f)(calls); }
*/
import "C"

import (
	_ "embed"
	"testing"
	"unsafe"

	"github.com/kvtier/kvtier/internal/fakelib"
)

//go:embed fakecufile.c.src
var fakeCUFile []byte

// An Option changes how the fake is compiled.
type Option string

// NoV2 builds a library without cuFileDriverClose_v2, like GDS releases
// before the reference-counted close.
const NoV2 Option = "-DFAKECUFILE_NO_V2"

// Build returns the path of a fresh copy of the fake libcufile in a new
// temporary directory (compiled once per source and options). The test
// is skipped when there is no C compiler.
func Build(t testing.TB, opts ...Option) string {
	t.Helper()
	flags := []string{"-Werror"}
	for _, o := range opts {
		flags = append(flags, string(o))
	}
	return fakelib.Path(t, fakelib.Lib{Name: "libcufile.so.0", Source: fakeCUFile, Flags: flags})
}

// Fail makes every later call of sym in the loaded fake at lib fail with
// code (a CUfileOpError such as 5001; for cuFileRead and cuFileWrite,
// -1 fails with errno EIO); code 0 clears it.
func Fail(t testing.TB, lib, sym string, code int) {
	t.Helper()
	cs := C.CString(sym)
	defer C.free(unsafe.Pointer(cs))
	C.call_fail(fakelib.Sym(t, lib, "fakecufile_fail"), cs, C.int(code))
}

// NVFS makes cuFileDriverGetProperties of the loaded fake at lib report
// nvidia-fs major.minor in use; 0, 0 (the default) reports none, as
// cuFile does in compatibility mode.
func NVFS(t testing.TB, lib string, major, minor uint) {
	t.Helper()
	C.call_nvfs(fakelib.Sym(t, lib, "fakecufile_nvfs"), C.unsigned(major), C.unsigned(minor))
}

// A State is what the loaded fake holds.
type State struct {
	Open    int64 // cuFileDriverOpen calls not yet closed
	Handles int64 // registered file handles
	Buffers int64 // registered buffers
	Reads   int64 // cuFileRead calls that read
	Writes  int64 // cuFileWrite calls that wrote
}

// StateOf returns the state of the loaded fake at lib.
func StateOf(t testing.TB, lib string) State {
	t.Helper()
	var o, h, b, r, w C.long
	C.call_state(fakelib.Sym(t, lib, "fakecufile_state"), &o, &h, &b, &r, &w)
	return State{Open: int64(o), Handles: int64(h), Buffers: int64(b), Reads: int64(r), Writes: int64(w)}
}

// SetCtxFunc returns the fake's stand-in for cuCtxSetCurrent in the
// loaded fake at lib: it records the context and fails with 201 for the
// context 0xbad.
func SetCtxFunc(t testing.TB, lib string) unsafe.Pointer {
	t.Helper()
	return fakelib.Sym(t, lib, "fakecufile_set_ctx")
}

// LastCtx returns the last context the fake's stand-in made current and
// how many times it was called.
func LastCtx(t testing.TB, lib string) (uintptr, int64) {
	t.Helper()
	var n C.long
	c := C.ctx_of(fakelib.Sym(t, lib, "fakecufile_ctx"), &n)
	return uintptr(c), int64(n)
}
