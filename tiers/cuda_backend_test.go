package tiers_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtier/kvtier/cuda"
	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/tiers"
)

// openFake opens the cuda backend on a fresh fake driver.
func openFake(t *testing.T, env map[string]string, cfg tiers.BackendConfig) tiers.Backend {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	libs := cudatest.Use(t)
	if cfg.LibCUDA == "" {
		cfg.LibCUDA = libs.CUDA
	}
	if cfg.LibCUBLAS == "" {
		cfg.LibCUBLAS = libs.CUBLAS
	}
	b, _, err := tiers.OpenBackend(context.Background(), "cuda", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close backend: %v", err)
		}
	})
	return b
}

func TestCUDABackendWithoutDriver(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "libcuda.so.1")
	_, _, err := tiers.OpenBackend(context.Background(), "cuda", tiers.BackendConfig{NUMA: -1, LibCUDA: bad})
	if err == nil || !errors.Is(err, cuda.ErrNoDriver) || !strings.Contains(err.Error(), "cuda: cannot load libcuda (tried "+bad+")") {
		t.Fatalf("open without a driver: %v", err)
	}
	b, why, err := tiers.OpenBackend(context.Background(), "auto", tiers.BackendConfig{NUMA: -1, LibCUDA: bad})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Name() != "host" || len(why) == 0 || !strings.Contains(strings.Join(why, ";"), "cuda: cuda: cannot load libcuda") {
		t.Errorf("auto chose %s, why %q", b.Name(), why)
	}
}

func TestCUDABackendOpenErrors(t *testing.T) {
	libs := cudatest.Use(t)
	_, _, err := tiers.OpenBackend(context.Background(), "cuda", tiers.BackendConfig{GPU: 3, NUMA: -1, LibCUDA: libs.CUDA})
	if err == nil || !strings.Contains(err.Error(), "GPU 3 asked for, but the driver sees 1 device(s)") {
		t.Errorf("gpu out of range: %v", err)
	}
	t.Setenv("FAKECUDA_INIT_FAIL", "1")
	libs = cudatest.Use(t)
	_, _, err = tiers.OpenBackend(context.Background(), "cuda", tiers.BackendConfig{NUMA: -1, LibCUDA: libs.CUDA})
	if err == nil || !strings.Contains(err.Error(), "cuInit: CUDA_ERROR_NO_DEVICE") {
		t.Errorf("cuInit failing: %v", err)
	}
}

func TestCUDABackendGather(t *testing.T) {
	g := kv.Geometry{Model: "tiny", Layers: 2, KVHeads: 2, HeadDim: 8, DTypeBytes: 2, BlockTokens: 16}
	for _, numa := range []int{-1, 0} {
		b := openFake(t, nil, tiers.BackendConfig{NUMA: numa, Log: os.Stderr})
		if b.Name() != "cuda" || b.Device() != "Fake CUDA Device 0 [0000:19:00.0]" || b.ComputeDType() != "bf16" {
			t.Fatalf("backend %s %q %s", b.Name(), b.Device(), b.ComputeDType())
		}
		if got := b.CopyModes(); len(got) != 3 {
			t.Errorf("copy modes %v", got)
		}
		for _, src := range []tiers.MemKind{tiers.Device, tiers.Pinned, tiers.Pageable} {
			for _, layout := range kv.Layouts() {
				for _, mode := range tiers.CopyModes() {
					name := string(src) + "/" + string(layout) + "/" + string(mode)
					if numa >= 0 {
						name += "/numa0"
					}
					t.Run(name, func(t *testing.T) {
						gather(t, b, g, src, layout, mode)
					})
				}
			}
		}
	}
}

func gather(t *testing.T, b tiers.Backend, g kv.Geometry, srcKind tiers.MemKind, layout kv.Layout, mode tiers.CopyMode) {
	const blocks, seed = 6, 42
	sp := kv.Pool{Geometry: g, Layout: layout, Slots: kv.PoolSlots(blocks)}
	dp := kv.Pool{Geometry: g, Layout: layout, Slots: blocks}
	src := tiers.AllocTest(t, b, srcKind, sp.Size())
	dst := tiers.AllocTest(t, b, tiers.Device, dp.Size())
	if (src.Host() == nil) != (srcKind == tiers.Device) || dst.Host() != nil {
		t.Fatalf("Host() of %s / device buffers", srcKind)
	}
	fill := make([]byte, sp.Size())
	pattern.Fill(fill, seed, 0)
	if _, err := src.WriteAt(fill, 0); err != nil {
		t.Fatal(err)
	}
	slots, _ := kv.Placement(seed, sp.Slots, blocks)
	dslots := []int{0, 1, 2, 3, 4, 5}
	plan, err := kv.GatherPlan(sp, slots, dp, dslots)
	if err != nil {
		t.Fatal(err)
	}
	// The first copy of a kind on a backend runs unheld (see
	// TestCUDABackendWarmsUpUnheld); the second is held where the memory
	// allows.
	tm := b.Timer(tiers.Queued)
	for rep := range 2 {
		if err := tm.Start(); err != nil {
			t.Fatal(err)
		}
		if err := b.Copy(dst, src, plan, mode); err != nil {
			tm.Stop()
			t.Fatal(err)
		}
		sec, err := tm.Stop()
		if err != nil || sec <= 0 {
			t.Fatalf("Stop = %g, %v", sec, err)
		}
		if held := tm.(tiers.HeldTimer).Held(); rep == 1 && held != (srcKind != tiers.Pageable) {
			t.Errorf("held = %v for %s", held, srcKind)
		}
	}
	out := make([]byte, dp.Size())
	if _, err := dst.ReadAt(out, 0); err != nil {
		t.Fatal(err)
	}
	check := plan
	if mode == tiers.Contiguous {
		c, _ := kv.ContiguousSpan(plan, sp.Size(), dp.Size())
		check = []kv.Copy{c}
	}
	for i, c := range check {
		if err := pattern.Check(out[c.Dst:c.Dst+c.Bytes], seed, c.Src); err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
	}
}

func TestCUDABackendSecondGPU(t *testing.T) {
	g := kv.Geometry{Model: "tiny", Layers: 2, KVHeads: 2, HeadDim: 8, DTypeBytes: 2, BlockTokens: 16}
	b := openFake(t, map[string]string{"FAKECUDA_DEVICES": "2"}, tiers.BackendConfig{GPU: 1, NUMA: -1})
	if b.Device() != "Fake CUDA Device 1 [0000:1a:00.0]" {
		t.Errorf("device %q", b.Device())
	}
	gather(t, b, g, tiers.Pinned, kv.Layerwise, tiers.Batch)
	gather(t, b, g, tiers.Device, kv.Blockwise, tiers.Batch)
}

// TestCUDABackendFreeWhileHeld closes a device buffer in the middle of a
// held sample: cuMemFree synchronises the device, so the backend must let
// the stream go first (the fake, like a driver, waits for the stream).
func TestCUDABackendFreeWhileHeld(t *testing.T) {
	b := openFake(t, nil, tiers.BackendConfig{NUMA: -1})
	src, _ := b.Alloc(tiers.Pinned, 1<<16)
	defer src.Close()
	dst, _ := b.Alloc(tiers.Device, 1<<16)
	other, _ := b.Alloc(tiers.Device, 1<<16)
	tm := b.Timer(tiers.Queued)
	if err := tm.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Copy(dst, src, []kv.Copy{{Bytes: 1 << 16}}, tiers.PerCopy); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatalf("free during a held sample: %v", err)
	}
	if _, err := tm.Stop(); err != nil {
		t.Fatal(err)
	}
	if tm.(tiers.HeldTimer).Held() {
		t.Error("sample reported held after the stream was let go")
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCUDABackendWarmsUpUnheld: lazily loaded kernels must not load behind
// a held stream, so the first copy of each kind and the first GEMM of
// each shape run unheld; repeats are held.
func TestCUDABackendWarmsUpUnheld(t *testing.T) {
	b := openFake(t, nil, tiers.BackendConfig{NUMA: -1})
	pin, _ := b.Alloc(tiers.Pinned, 1<<16)
	defer pin.Close()
	dev, _ := b.Alloc(tiers.Device, 1<<16)
	defer dev.Close()
	dev2, _ := b.Alloc(tiers.Device, 1<<16)
	defer dev2.Close()
	plan := []kv.Copy{{Dst: 0, Src: 4096, Bytes: 4096}}
	small := []kv.GEMM{{Name: "small", M: 2, N: 2, K: 2}}
	big := []kv.GEMM{{Name: "big", M: 4, N: 4, K: 4}}
	tm := b.Timer(tiers.Queued)
	sample := func(work func() error) bool {
		if err := tm.Start(); err != nil {
			t.Fatal(err)
		}
		if err := work(); err != nil {
			t.Fatal(err)
		}
		if _, err := tm.Stop(); err != nil {
			t.Fatal(err)
		}
		return tm.(tiers.HeldTimer).Held()
	}
	h2d := func() error { return b.Copy(dev, pin, plan, tiers.PerCopy) }
	d2d := func() error { return b.Copy(dev2, dev, plan, tiers.PerCopy) }
	for i, step := range []struct {
		name string
		work func() error
		held bool
	}{
		{"first H2D", h2d, false},
		{"second H2D", h2d, true},
		{"first D2D", d2d, false},
		{"second D2D", d2d, true},
		{"first GEMM of a shape", func() error { return b.GEMMs(big) }, false},
		{"same shape again", func() error { return b.GEMMs(big) }, true},
		// A smaller shape fits the scratch and the handle exists: only
		// the warm-up lets go of the stream.
		{"a new shape", func() error { return b.GEMMs(small) }, false},
		{"the new shape again", func() error { return b.GEMMs(small) }, true},
		{"H2D still warm", h2d, true},
	} {
		if held := sample(step.work); held != step.held {
			t.Errorf("step %d, %s: held %v, want %v", i, step.name, held, step.held)
		}
	}
}

// TestCUDABackendLearnsQueueDepth: work larger than the fake's queue
// blocks behind the hold; the watchdog lets it go, and later samples that
// large are not held at all (no second stall) while small ones still are.
func TestCUDABackendLearnsQueueDepth(t *testing.T) {
	tests := []struct {
		name   string
		limit  string
		mode   tiers.CopyMode
		copies int
	}{
		{"batch", "600", tiers.Batch, 1024},    // a batch counts 1 until it blocks
		{"percopy", "300", tiers.PerCopy, 400}, // below the 512 cap, above the queue
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			b := openFake(t, map[string]string{"FAKECUDA_QUEUE_LIMIT": tt.limit}, tiers.BackendConfig{NUMA: -1, Log: &log})
			size := int64(tt.copies) * 512
			src, _ := b.Alloc(tiers.Pinned, size)
			defer src.Close()
			dst, _ := b.Alloc(tiers.Device, size)
			defer dst.Close()
			var plan []kv.Copy
			for i := int64(0); i < int64(tt.copies); i++ {
				plan = append(plan, kv.Copy{Dst: i * 512, Src: (int64(tt.copies) - 1 - i) * 512, Bytes: 512})
			}
			sample := func(plan []kv.Copy) (bool, time.Duration) {
				tm := b.Timer(tiers.Queued)
				if err := tm.Start(); err != nil {
					t.Fatal(err)
				}
				t0 := time.Now()
				if err := b.Copy(dst, src, plan, tt.mode); err != nil {
					t.Fatal(err)
				}
				took := time.Since(t0)
				if _, err := tm.Stop(); err != nil {
					t.Fatal(err)
				}
				return tm.(tiers.HeldTimer).Held(), took
			}
			if held, _ := sample(plan[:8]); held {
				t.Error("the first copy of its kind was held")
			}
			if held, took := sample(plan); held || took < 400*time.Millisecond {
				t.Errorf("first sample: held %v after %v; want a stall and held=false", held, took)
			}
			if held, took := sample(plan); held || took > 300*time.Millisecond {
				t.Errorf("second sample: held %v after %v; want no stall and held=false", held, took)
			}
			if held, _ := sample(plan[:8]); !held {
				t.Error("a small sample is no longer held")
			}
			if !strings.Contains(log.String(), "blocked behind the held stream") {
				t.Errorf("no warning: %q", log.String())
			}
		})
	}
}

func TestCUDABackendFailures(t *testing.T) {
	g := kv.Geometry{Model: "tiny", Layers: 2, KVHeads: 2, HeadDim: 8, DTypeBytes: 2, BlockTokens: 16}
	sp := kv.Pool{Geometry: g, Layout: kv.Layerwise, Slots: 8}
	plan, _ := kv.GatherPlan(sp, []int{3, 5}, sp, []int{0, 1})

	// Copy 0 is the timer's warm copy; the first five allocations are the
	// timers' (hold flag, warm-copy buffers), src and dst.
	b := openFake(t, map[string]string{"FAKECUDA_FAIL_COPY_AT": "3", "FAKECUDA_FAIL_ALLOC_AFTER": "5"}, tiers.BackendConfig{NUMA: -1})
	src := tiers.AllocTest(t, b, tiers.Pinned, sp.Size())
	dst := tiers.AllocTest(t, b, tiers.Device, sp.Size())
	if _, err := b.Alloc(tiers.Device, 1<<20); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_OUT_OF_MEMORY") {
		t.Errorf("alloc past the limit: %v", err)
	}
	tm := b.Timer(tiers.Queued)
	tm.Start()
	err := b.Copy(dst, src, plan, tiers.PerCopy)
	if err == nil || !strings.Contains(err.Error(), "cuMemcpyHtoDAsync") {
		t.Errorf("copy failing mid-plan: %v", err)
	}
	if _, err := tm.Stop(); err != nil {
		t.Errorf("timer after a failed copy: %v", err)
	}
	if err := b.Sync(); err != nil {
		t.Errorf("sync after a failed copy: %v", err)
	}
	if err := b.Copy(src, src, plan, tiers.PerCopy); err == nil {
		t.Error("host-to-host copy accepted")
	}
	bad := append([]kv.Copy(nil), plan...)
	bad[1].Dst = sp.Size()
	if err := b.Copy(dst, src, bad, tiers.Batch); err == nil || !strings.Contains(err.Error(), "outside its buffers") {
		t.Errorf("plan outside the buffer: %v", err)
	}

	old := openFake(t, map[string]string{"FAKECUDA_VERSION": "11080"}, tiers.BackendConfig{NUMA: -1})
	if got := old.CopyModes(); len(got) != 2 {
		t.Errorf("11.8 copy modes %v", got)
	}
	src2 := tiers.AllocTest(t, old, tiers.Pinned, sp.Size())
	dst2 := tiers.AllocTest(t, old, tiers.Device, sp.Size())
	if err := old.Copy(dst2, src2, plan, tiers.Batch); !errors.Is(err, cuda.ErrUnsupported) {
		t.Errorf("batch on 11.8: %v", err)
	}
}

func TestCUDABackendGEMMs(t *testing.T) {
	b := openFake(t, map[string]string{"FAKECUBLAS_FAIL_GEMM_AT": "3"}, tiers.BackendConfig{NUMA: -1})
	ops := []kv.GEMM{{Name: "qkv", M: 16, N: 32, K: 8}, {Name: "scores", M: 16, N: 16, K: 8, Batch: 4}}
	tm := b.Timer(tiers.Queued)
	tm.Start()
	if err := b.GEMMs(ops); err != nil {
		t.Fatal(err)
	}
	if sec, err := tm.Stop(); err != nil || sec <= 0 {
		t.Fatalf("Stop = %g, %v", sec, err)
	}
	err := b.GEMMs(ops) // the fourth GEMM fails
	if err == nil || !strings.Contains(err.Error(), "scores: ") || !strings.Contains(err.Error(), "CUBLAS_STATUS_EXECUTION_FAILED") {
		t.Errorf("injected failure: %v", err)
	}
	if err := b.GEMMs([]kv.GEMM{{Name: "empty"}}); err == nil {
		t.Error("zero-size gemm accepted")
	}
	nob := openFake(t, nil, tiers.BackendConfig{NUMA: -1, LibCUBLAS: filepath.Join(t.TempDir(), "libcublas.so.12")})
	if err := nob.GEMMs(ops); err == nil || !strings.Contains(err.Error(), "cannot load libcublas") {
		t.Errorf("gemm without cublas: %v", err)
	}
}

func TestCUDABackendExportDMABuf(t *testing.T) {
	b := openFake(t, nil, tiers.BackendConfig{NUMA: -1})
	exp, ok := b.(tiers.DMABufExporter)
	if !ok {
		t.Fatal("cuda backend is not a DMABufExporter")
	}
	d, _ := b.Alloc(tiers.Device, 100000)
	defer d.Close()
	fd, off, err := exp.ExportDMABuf(d)
	if err != nil || fd < 0 || off != 0 {
		t.Fatalf("export = %d, %d, %v", fd, off, err)
	}
	syscall.Close(fd)
	// A small allocation from the driver's sub-allocator does not start on
	// a page: no page-aligned range lies inside it, so it is not exported.
	small, _ := b.Alloc(tiers.Device, 10000)
	defer small.Close()
	if _, _, err := exp.ExportDMABuf(small); !errors.Is(err, cuda.ErrUnsupported) || !strings.Contains(err.Error(), "does not start on a page") {
		t.Errorf("export of a sub-allocated buffer: %v", err)
	}
	h, _ := b.Alloc(tiers.Pinned, 4096)
	defer h.Close()
	if _, _, err := exp.ExportDMABuf(h); !errors.Is(err, cuda.ErrUnsupported) {
		t.Errorf("export of pinned memory: %v", err)
	}
	hid := openFake(t, map[string]string{"FAKECUDA_HIDE": "cuMemGetHandleForAddressRange"}, tiers.BackendConfig{NUMA: -1})
	d2, _ := hid.Alloc(tiers.Device, 4096)
	defer d2.Close()
	if _, _, err := hid.(tiers.DMABufExporter).ExportDMABuf(d2); !errors.Is(err, cuda.ErrUnsupported) {
		t.Errorf("export without the symbol: %v", err)
	}
}
