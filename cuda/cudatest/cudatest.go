// Package cudatest builds the fake CUDA driver and cuBLAS of
// csrc/fakecuda for tests, with the system C compiler, so the cuda
// package and the cuda backend are tested on machines without a GPU.
// Each Build is a fresh copy of the libraries, so a test's FAKECUDA_*
// settings (read once per loaded copy) do not leak into other tests.
package cudatest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Libs are the paths of a built fake libcuda and libcublas.
type Libs struct {
	CUDA, CUBLAS string
}

// An Option changes how the fake is compiled.
type Option string

// V1Only builds a libcuda without cuGetProcAddress_v2, like drivers
// before CUDA 12.
const V1Only Option = "-DFAKECUDA_GETPROC_V1_ONLY"

// srcDir is csrc/fakecuda of this module.
func srcDir(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cudatest: cannot locate sources")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "csrc", "fakecuda")
}

// Build compiles the fake libraries into a new temporary directory. The
// test is skipped when there is no C compiler.
func Build(t testing.TB, opts ...Option) Libs {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("cudatest: no C compiler (%s) to build the fake libcuda", cc)
	}
	dir := t.TempDir()
	src := srcDir(t)
	libs := Libs{CUDA: filepath.Join(dir, "libcuda.so.1"), CUBLAS: filepath.Join(dir, "libcublas.so.12")}
	build := func(out, in string, extra ...string) {
		args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-o", out}, extra...)
		args = append(args, filepath.Join(src, in), "-lpthread")
		if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("cudatest: %s %v: %v\n%s", cc, args, err, b)
		}
	}
	var flags []string
	for _, o := range opts {
		flags = append(flags, string(o))
	}
	build(libs.CUDA, "fakecuda.c", flags...)
	build(libs.CUBLAS, "fakecublas.c")
	return libs
}

// Use builds the fake libraries and points KVTIER_LIBCUDA and
// KVTIER_LIBCUBLAS at them for the rest of the test.
func Use(t testing.TB, opts ...Option) Libs {
	t.Helper()
	libs := Build(t, opts...)
	t.Setenv("KVTIER_LIBCUDA", libs.CUDA)
	t.Setenv("KVTIER_LIBCUBLAS", libs.CUBLAS)
	return libs
}
