// Package cudatest builds the fake CUDA driver and cuBLAS kept beside it
// (fakecuda.c.src, fakecublas.c.src) for tests, with the system C
// compiler, so the cuda package and the cuda backend are tested on
// machines without a GPU. Each Build is a fresh copy of the libraries (a
// new file, so dlopen loads a new instance), so a test's FAKECUDA_*
// settings, read once per loaded copy, do not leak into other tests.
package cudatest

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

// wrong_calls asks the loaded fake cuBLAS at path how many calls came from
// a thread whose current context was not the handle's; -1 if it is not
// loaded.
static long wrong_calls(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return -1;
	long (*f)(void) = (long (*)(void))dlsym(h, "fakecublas_wrong_context_calls");
	return f ? f() : -1;
}
*/
import "C"

import (
	"crypto/sha256"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"
)

//go:embed fakecuda.c.src
var fakeCUDA []byte

//go:embed fakecublas.c.src
var fakeCUBLAS []byte

// Libs are the paths of a built fake libcuda and libcublas. The fake
// libcublas finds the fake libcuda in its own directory.
type Libs struct {
	CUDA, CUBLAS string
}

// libcudaFlags gives the fake libcuda the real one's soname, so a fake
// cuBLAS elsewhere (where pip puts cuBLAS) finds the loaded driver.
const libcudaFlags = "-Wl,-soname,libcuda.so.1"

// An Option changes how the fake is compiled.
type Option string

// V1Only builds a libcuda without cuGetProcAddress_v2, like drivers
// before CUDA 12.
const V1Only Option = "-DFAKECUDA_GETPROC_V1_ONLY"

// Build returns a fresh copy of the fake libraries in a new temporary
// directory. They are compiled once per source version and options into
// a cache directory under os.TempDir (named by a hash of both) and copied
// from there, so each test loads its own instance. The test is skipped
// when there is no C compiler.
func Build(t testing.TB, opts ...Option) Libs {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("cudatest: no C compiler (%s) to build the fake libcuda", cc)
	}
	var flags []string
	for _, o := range opts {
		flags = append(flags, string(o))
	}
	h := sha256.New()
	fmt.Fprintln(h, cc, flags, libcudaFlags)
	h.Write(fakeCUDA)
	h.Write(fakeCUBLAS)
	cache := filepath.Join(os.TempDir(), fmt.Sprintf("kvtier-fakecuda-%x", h.Sum(nil)[:8]))
	if _, err := os.Stat(filepath.Join(cache, "libcublas.so.12")); err != nil {
		compile(t, cc, flags, cache)
	}
	return Copy(t, cache, t.TempDir())
}

// compile builds both libraries into cache.
func compile(t testing.TB, cc string, flags []string, cache string) {
	tmp, err := os.MkdirTemp(os.TempDir(), "kvtier-fakecuda-build-")
	if err != nil {
		t.Fatalf("cudatest: %v", err)
	}
	defer os.RemoveAll(tmp)
	build := func(out, name string, src []byte, extra ...string) {
		in := filepath.Join(tmp, name)
		if err := os.WriteFile(in, src, 0o644); err != nil {
			t.Fatalf("cudatest: %v", err)
		}
		args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-o", filepath.Join(tmp, out)}, extra...)
		args = append(args, in, "-ldl", "-lpthread")
		if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("cudatest: %s %v: %v\n%s", cc, args, err, b)
		}
	}
	build("libcuda.so.1", "fakecuda.c", fakeCUDA, append([]string{libcudaFlags}, flags...)...)
	build("libcublas.so.12", "fakecublas.c", fakeCUBLAS)
	// Another test process may have won the race; either copy is good.
	if err := os.Rename(tmp, cache); err != nil {
		if _, serr := os.Stat(filepath.Join(cache, "libcublas.so.12")); serr != nil {
			t.Fatalf("cudatest: %v", err)
		}
	}
}

// Copy copies the built libraries from dir src into dir dst (the fake
// cuBLAS needs the fake libcuda beside it) and returns their paths there.
func Copy(t testing.TB, src, dst string) Libs {
	t.Helper()
	libs := Libs{CUDA: filepath.Join(dst, "libcuda.so.1"), CUBLAS: filepath.Join(dst, "libcublas.so.12")}
	for _, f := range []string{libs.CUDA, libs.CUBLAS} {
		b, err := os.ReadFile(filepath.Join(src, filepath.Base(f)))
		if err != nil {
			t.Fatalf("cudatest: %v", err)
		}
		if err := os.WriteFile(f, b, 0o755); err != nil {
			t.Fatalf("cudatest: %v", err)
		}
	}
	return libs
}

// Use builds the fake libraries and points KVTIER_LIBCUDA and
// KVTIER_LIBCUBLAS at them for the rest of the test, for a command under
// test that reads them (cmd/kvtier).
func Use(t testing.TB, opts ...Option) Libs {
	t.Helper()
	libs := Build(t, opts...)
	t.Setenv("KVTIER_LIBCUDA", libs.CUDA)
	t.Setenv("KVTIER_LIBCUBLAS", libs.CUBLAS)
	return libs
}

// WrongContextCalls returns how many calls the loaded fake cuBLAS of libs
// saw from a thread whose current context was not its handle's device.
func WrongContextCalls(libs Libs) (int64, error) {
	p := C.CString(libs.CUBLAS)
	defer C.free(unsafe.Pointer(p))
	n := C.wrong_calls(p)
	if n < 0 {
		return 0, fmt.Errorf("cudatest: %s is not loaded", libs.CUBLAS)
	}
	return int64(n), nil
}
