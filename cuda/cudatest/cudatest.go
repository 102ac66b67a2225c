// Package cudatest builds the fake CUDA driver and cuBLAS of
// csrc/fakecuda for tests, with the system C compiler, so the cuda
// package and the cuda backend are tested on machines without a GPU.
// Each Build is a fresh copy of the libraries (a new file, so dlopen
// loads a new instance), so a test's FAKECUDA_* settings, read once per
// loaded copy, do not leak into other tests.
package cudatest

import (
	"crypto/sha256"
	"fmt"
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
	src := srcDir(t)
	var flags []string
	for _, o := range opts {
		flags = append(flags, string(o))
	}
	h := sha256.New()
	fmt.Fprintln(h, cc, flags)
	for _, f := range []string{"fakecuda.c", "fakecublas.c"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatalf("cudatest: %v", err)
		}
		h.Write(b)
	}
	cache := filepath.Join(os.TempDir(), fmt.Sprintf("kvtier-fakecuda-%x", h.Sum(nil)[:8]))
	if _, err := os.Stat(filepath.Join(cache, "libcublas.so.12")); err != nil {
		tmp, err := os.MkdirTemp(os.TempDir(), "kvtier-fakecuda-build-")
		if err != nil {
			t.Fatalf("cudatest: %v", err)
		}
		defer os.RemoveAll(tmp)
		build := func(out, in string, extra ...string) {
			args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-o", filepath.Join(tmp, out)}, extra...)
			args = append(args, filepath.Join(src, in), "-lpthread")
			if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
				t.Fatalf("cudatest: %s %v: %v\n%s", cc, args, err, b)
			}
		}
		build("libcuda.so.1", "fakecuda.c", flags...)
		build("libcublas.so.12", "fakecublas.c")
		// Another test process may have won the race; either copy is good.
		if err := os.Rename(tmp, cache); err != nil {
			if _, serr := os.Stat(filepath.Join(cache, "libcublas.so.12")); serr != nil {
				t.Fatalf("cudatest: %v", err)
			}
		}
	}
	dir := t.TempDir()
	libs := Libs{CUDA: filepath.Join(dir, "libcuda.so.1"), CUBLAS: filepath.Join(dir, "libcublas.so.12")}
	for _, f := range []string{libs.CUDA, libs.CUBLAS} {
		b, err := os.ReadFile(filepath.Join(cache, filepath.Base(f)))
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
// KVTIER_LIBCUBLAS at them for the rest of the test.
func Use(t testing.TB, opts ...Option) Libs {
	t.Helper()
	libs := Build(t, opts...)
	t.Setenv("KVTIER_LIBCUDA", libs.CUDA)
	t.Setenv("KVTIER_LIBCUBLAS", libs.CUBLAS)
	return libs
}
