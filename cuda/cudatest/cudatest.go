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

// loaded is whether the library at path is loaded.
static int loaded(const char *path) { return dlopen(path, RTLD_NOW | RTLD_NOLOAD) != NULL; }

// cuda_call asks the loaded fake libcuda at path: what fakecuda_proc_abi
// (name != NULL) or fakecuda_gdr_flushes (name == NULL) says; -1 if the
// library is not loaded.
static long cuda_call(const char *path, const char *name)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return -1;
	if (name) {
		int (*f)(const char *) = (int (*)(const char *))dlsym(h, "fakecuda_proc_abi");
		return f ? f(name) : -1;
	}
	long (*g)(void) = (long (*)(void))dlsym(h, "fakecuda_gdr_flushes");
	return g ? g() : -1;
}
*/
import "C"

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/kvtier/kvtier/internal/fakelib"
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
// directory (compiled once per source and options), so each test loads
// its own instance. The test is skipped when there is no C compiler.
func Build(t testing.TB, opts ...Option) Libs {
	t.Helper()
	flags := []string{libcudaFlags}
	for _, o := range opts {
		flags = append(flags, string(o))
	}
	dir := fakelib.Build(t,
		fakelib.Lib{Name: "libcuda.so.1", Source: fakeCUDA, Flags: flags},
		fakelib.Lib{Name: "libcublas.so.12", Source: fakeCUBLAS})
	return Libs{CUDA: filepath.Join(dir, "libcuda.so.1"), CUBLAS: filepath.Join(dir, "libcublas.so.12")}
}

// Wheel builds a fresh fake libcuda and lays out a fake cuBLAS as pip's
// nvidia-cublas-cu12 wheel does: site/nvidia/cublas/lib/libcublas.so.12
// beside the libcublasLt.so.12 it needs (DT_NEEDED, found by soname only:
// no run path), under a new site-packages directory site. Libs.CUBLAS is
// that libcublas.
func Wheel(t testing.TB) (libs Libs, site string) {
	t.Helper()
	dir := fakelib.Build(t,
		fakelib.Lib{Name: "libcuda.so.1", Source: fakeCUDA, Flags: []string{libcudaFlags}},
		fakelib.Lib{Name: "libcublasLt.so.12", Source: []byte("int fakecublaslt_loaded = 1;\n"), Flags: []string{"-Wl,-soname,libcublasLt.so.12"}},
		fakelib.Lib{Name: "libcublas.so.12", Source: fakeCUBLAS, Flags: []string{"-Wl,-soname,libcublas.so.12", "-L.", "-Wl,--no-as-needed", "-l:libcublasLt.so.12"}})
	site = filepath.Join(t.TempDir(), "site-packages")
	lib := filepath.Join(site, "nvidia", "cublas", "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"libcublasLt.so.12", "libcublas.so.12"} {
		if err := os.Rename(filepath.Join(dir, n), filepath.Join(lib, n)); err != nil {
			t.Fatal(err)
		}
	}
	return Libs{CUDA: filepath.Join(dir, "libcuda.so.1"), CUBLAS: filepath.Join(lib, "libcublas.so.12")}, site
}

// Loaded reports whether the library at path is loaded in this process.
func Loaded(path string) bool {
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	return C.loaded(p) != 0
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

// ProcABI returns the newest ABI version of the driver function name
// that the loaded fake libcuda of libs handed out through
// cuGetProcAddress (0: none).
func ProcABI(libs Libs, name string) (int, error) {
	p, n := C.CString(libs.CUDA), C.CString(name)
	defer C.free(unsafe.Pointer(p))
	defer C.free(unsafe.Pointer(n))
	v := C.cuda_call(p, n)
	if v < 0 {
		return 0, fmt.Errorf("cudatest: %s is not loaded", libs.CUDA)
	}
	return int(v), nil
}

// GPUDirectFlushes returns how many cuFlushGPUDirectRDMAWrites calls the
// loaded fake libcuda of libs served. FAKECUDA_GDR_ORDERING=0 makes the
// fake report no GPUDirect RDMA write ordering, so readers must flush.
func GPUDirectFlushes(libs Libs) (int64, error) {
	p := C.CString(libs.CUDA)
	defer C.free(unsafe.Pointer(p))
	v := C.cuda_call(p, nil)
	if v < 0 {
		return 0, fmt.Errorf("cudatest: %s is not loaded", libs.CUDA)
	}
	return int64(v), nil
}
