package fakelib

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

static void *loaded_sym(const char *path, const char *name)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	return h ? dlsym(h, name) : NULL;
}
*/
import "C"

import (
	"path/filepath"
	"testing"
	"unsafe"
)

// Path builds lib as Build does and returns the path of the library in
// the test's fresh copy.
func Path(t testing.TB, lib Lib) string {
	t.Helper()
	return filepath.Join(Build(t, lib), lib.Name)
}

// Sym returns the address of name in the library at path, which this
// process has loaded already (a fake's test hooks); the test fails if it
// has not, or the library lacks name.
func Sym(t testing.TB, path, name string) unsafe.Pointer {
	t.Helper()
	cp, cn := C.CString(path), C.CString(name)
	defer C.free(unsafe.Pointer(cp))
	defer C.free(unsafe.Pointer(cn))
	p := C.loaded_sym(cp, cn)
	if p == nil {
		t.Fatalf("%s is not loaded or lacks %s", path, name)
	}
	return p
}
