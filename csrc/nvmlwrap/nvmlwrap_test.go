package nvmlwrap_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/csrc/nvmlwrap"
	"github.com/kvtier/kvtier/csrc/nvmlwrap/nvmltest"
	"github.com/kvtier/kvtier/csrc/shim"
)

// TestFakeGPUs reads the fake library's driver and GPUs through the
// shim: every field as the fake states it, Init and Shutdown paired.
func TestFakeGPUs(t *testing.T) {
	t.Parallel()
	path := nvmltest.Build(t)
	l, err := nvmlwrap.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	drv, cuda, err := l.Driver()
	if err != nil || drv != "550.54.15" || cuda != 12080 {
		t.Errorf("Driver() = %q, %d, %v", drv, cuda, err)
	}
	n, err := l.Count()
	if err != nil || n != 2 {
		t.Fatalf("Count() = %d, %v", n, err)
	}
	want := []nvmlwrap.GPU{
		{Name: "NVIDIA H20", UUID: "GPU-00000000-1111-2222-3333-444444444444", BusID: "00000000:19:00.0", MemoryBytes: 102625181696,
			PCIeGen: 4, PCIeWidth: 16, PCIeMaxGen: 5, PCIeMaxWidth: 16, SMClockMHz: 1755, MaxSMClockMHz: 1980, MemClockMHz: 2619, MIG: 0},
		{Name: "NVIDIA H20", UUID: "GPU-55555555-6666-7777-8888-999999999999", BusID: "00000000:3B:00.0", MemoryBytes: 102625181696,
			PCIeGen: 4, PCIeWidth: 16, PCIeMaxGen: 5, PCIeMaxWidth: 16, SMClockMHz: 1755, MaxSMClockMHz: 1980, MemClockMHz: 2619, MIG: 1},
	}
	for i, w := range want {
		if g, err := l.GPU(i); err != nil || g != w {
			t.Errorf("GPU(%d) = %+v, %v; want %+v", i, g, err, w)
		}
	}
	if g, err := l.GPUByBusID("00000000:3b:00.0"); err != nil || g != want[1] {
		t.Errorf("GPUByBusID = %+v, %v", g, err)
	}
	if err := l.Shutdown(); err != nil || nvmltest.Inits(t, path) != 0 {
		t.Errorf("Shutdown: %v, %d inits left", err, nvmltest.Inits(t, path))
	}
}

// TestErrors checks what a failed call says: the NVML function, the
// code's name and NVML's message; a failed query leaves its fields
// unknown without failing the device; a device NVML does not find is an
// error.
func TestErrors(t *testing.T) {
	t.Parallel()
	path := nvmltest.Build(t)
	l, err := nvmlwrap.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	nvmltest.Fail(t, path, "nvmlInit_v2", 9)
	err = l.Init()
	var e *nvmlwrap.Error
	if !errors.As(err, &e) || e.Op != "nvmlInit_v2" || e.Code != 9 || err.Error() != "nvmlInit_v2: ERROR_DRIVER_NOT_LOADED (Driver Not Loaded)" {
		t.Errorf("Init with the driver not loaded: %v", err)
	}
	nvmltest.Fail(t, path, "nvmlInit_v2", 0)
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	defer l.Shutdown()
	nvmltest.Fail(t, path, "nvmlDeviceGetMigMode", nvmlwrap.ErrNotSupported)
	if g, err := l.GPU(0); err != nil || g.MIG != -1 || g.Name != "NVIDIA H20" {
		t.Errorf("GPU(0) without MIG mode = %+v, %v", g, err)
	}
	if _, err := l.GPU(7); !errors.As(err, &e) || e.Op != "nvmlDeviceGetHandleByIndex_v2" {
		t.Errorf("GPU(7) = %v", err)
	}
	if _, err := l.GPUByBusID("00000000:99:00.0"); !errors.As(err, &e) || e.Code != nvmlwrap.ErrNotFound {
		t.Errorf("GPUByBusID of no GPU = %v", err)
	}
}

// TestNoLibrary: without libnvidia-ml, Load says which library it could
// not load, as NVML's own ERROR_LIBRARY_NOT_FOUND.
func TestNoLibrary(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	_, err := nvmlwrap.Load(missing)
	var e *nvmlwrap.Error
	if !errors.As(err, &e) || e.Code != shim.CodeNoLibrary || !strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load(%s) = %v", missing, err)
	}
}
