package cuda_test

import (
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kvtier/kvtier/cuda"
	"github.com/kvtier/kvtier/cuda/cudatest"
)

func TestBLASNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		driver int
		want   []string
	}{
		{12080, []string{"libcublas.so.12", "libcublas.so.11"}},
		{13000, []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}},
		{11080, []string{"libcublas.so.11"}},
		{0, []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}},
	} {
		if got := cuda.BLASNames(tt.driver); !slices.Equal(got, tt.want) {
			t.Errorf("BLASNames(%d) = %v, want %v", tt.driver, got, tt.want)
		}
	}
}

// TestBLASContextPerCall runs 10,000 cuBLAS calls for a handle on device 1
// with GOMAXPROCS=2 while other goroutines keep device 0's context current
// on whatever threads they run on, and busy goroutines force the
// scheduler to move goroutines between threads; cuCtxSetCurrent takes
// 50 µs, long enough for Go to hand the caller's P to another goroutine,
// as under load. The fake cuBLAS counts
// every call made from a thread whose current context is not device 1's:
// there must be none, so the context is made current in the same C call
// as the cuBLAS call.
func TestBLASContextPerCall(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	d, libs := open(t, map[string]string{"FAKECUDA_DEVICES": "2", "FAKECUDA_SET_CTX_DELAY_US": "50"})
	c0, err := d.PrimaryContext(0)
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Release()
	c1, err := d.PrimaryContext(1)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Release()
	s1, err := c1.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Destroy()
	b, err := cuda.OpenBLAS(libs.CUBLAS, d.Version, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := b.NewHandle(s1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c1.AllocDevice(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	op := []cuda.Gemm{{M: 1, N: 1, K: 1, A: m.Ptr(), B: m.Ptr() + 64, C: m.Ptr() + 128}}

	stop := make(chan struct{})
	var wg, ready sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		ready.Add(1)
		go func(device0 bool) {
			defer wg.Done()
			for x := 0; ; x++ {
				if x == 1 {
					ready.Done()
				}
				select {
				case <-stop:
					return
				default:
				}
				if device0 {
					c0.MemInfo() // device 0's context is current on this thread
				} else {
					for j := range 20000 {
						x ^= j
					}
				}
			}
		}(i%3 != 0)
	}
	ready.Wait()
	failed := 0
	for range 10000 {
		if _, err := h.Gemms(op); err != nil {
			failed++
		}
	}
	close(stop)
	wg.Wait()
	if err := h.Destroy(); err != nil {
		failed++
	}
	wrong, err := cudatest.WrongContextCalls(libs)
	if err != nil {
		t.Fatal(err)
	}
	if wrong != 0 || failed != 0 {
		t.Fatalf("%d of 10,000 cuBLAS calls ran where another device's context was current (%d failed)", wrong, failed)
	}
}

// TestOpenBLASFromWheel: with no libcublas on the loader's path, OpenBLAS
// finds the one in a pip wheel's directory, loading the libcublasLt
// beside it first; without the directory its error lists where it
// looked.
func TestOpenBLASFromWheel(t *testing.T) {
	libs, site := cudatest.Wheel(t)
	d, err := cuda.Open(libs.CUDA)
	if err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	dirs := []string{filepath.Join(empty, "nvidia", "cublas", "lib"), filepath.Join(empty, "nvidia", "cu13", "lib"), filepath.Join(site, "nvidia", "cublas", "lib")}
	_, err = cuda.OpenBLAS("", d.Version, func() ([]string, error) { return dirs[:2], errors.New("no python3 on PATH") })
	if err == nil {
		t.Skip("a libcublas.so.12 is on this machine's loader path")
	}
	// Each soname and each directory is said once, in one short line.
	for _, want := range []string{"libcublas.so.12, libcublas.so.11: not found by the loader", "none of them in " + dirs[0] + ", " + dirs[1], "no python3 on PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if n := strings.Count(err.Error(), "libcublas.so.12"); n != 1 {
		t.Errorf("error %q names libcublas.so.12 %d times", err, n)
	}
	b, err := cuda.OpenBLAS("", d.Version, func() ([]string, error) { return dirs, nil })
	if err != nil {
		t.Fatal(err)
	}
	if b.Path != libs.CUBLAS || !cudatest.Loaded(filepath.Join(filepath.Dir(libs.CUBLAS), "libcublasLt.so.12")) {
		t.Errorf("loaded %s (libcublasLt loaded: %v), want %s", b.Path, cudatest.Loaded(filepath.Join(filepath.Dir(libs.CUBLAS), "libcublasLt.so.12")), libs.CUBLAS)
	}
}
