package system_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
)

func TestParseLinkSpeed(t *testing.T) {
	for in, want := range map[string]int{
		"32.0 GT/s PCIe": 5, "16.0 GT/s PCIe": 4, "8.0 GT/s PCIe": 3, "8 GT/s": 3, "5.0 GT/s PCIe": 2,
		"2.5 GT/s PCIe": 1, "64.0 GT/s PCIe": 6, "Unknown": 0, "": 0, "12 GT/s": 0,
	} {
		if got := system.ParseLinkSpeed(in); got != want {
			t.Errorf("ParseLinkSpeed(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestLinkGBps(t *testing.T) {
	tests := []struct {
		gen, width int
		want       float64
	}{
		{5, 16, 63.015}, // 32 GT/s × 16 × 128/130 / 8
		{4, 16, 31.508},
		{3, 8, 7.877},
		{2, 16, 8},
		{6, 16, 121},
		{0, 16, 0}, {5, 0, 0}, {7, 16, 0},
	}
	for _, tt := range tests {
		if got := system.LinkGBps(tt.gen, tt.width); math.Abs(got-tt.want) > 0.001 {
			t.Errorf("LinkGBps(%d, %d) = %.4f, want %.3f", tt.gen, tt.width, got, tt.want)
		}
	}
}

func TestParseNVIDIAVersion(t *testing.T) {
	for in, want := range map[string]string{
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc 12.2\n": "550.54.15",
		"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder@U16)\n":            "570.86.15",
		"garbage": "",
		"":        "",
	} {
		if got := system.ParseNVIDIAVersion(in); got != want {
			t.Errorf("ParseNVIDIAVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalizeBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:19:00.0": "0000:19:00.0", "0000:1A:00.0": "0000:1a:00.0", "0001:c0:00.0": "0001:c0:00.0",
	} {
		if got := system.NormalizeBusID(in); got != want {
			t.Errorf("NormalizeBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

// fixture writes a sysfs PCI device for bus under a new root.
func fixture(t *testing.T, bus string, files map[string]string) string {
	root := t.TempDir()
	dir := filepath.Join(root, "sys/bus/pci/devices", bus)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestSysfs(t *testing.T) {
	root := fixture(t, "0000:19:00.0", map[string]string{"numa_node": "1", "current_link_speed": "16.0 GT/s PCIe",
		"current_link_width": "16", "max_link_speed": "32.0 GT/s PCIe", "max_link_width": "16"})
	if n := system.NUMANode(root, "00000000:19:00.0"); n != 1 {
		t.Errorf("NUMANode = %d", n)
	}
	if n := system.NUMANode(root, "0000:20:00.0"); n != -1 {
		t.Errorf("NUMANode of a missing device = %d", n)
	}
	if l := system.SysfsLink(root, "0000:19:00.0"); l != (system.Link{Gen: 4, Width: 16, MaxGen: 5, MaxWidth: 16}) {
		t.Errorf("SysfsLink = %+v", l)
	}
}

// TestCollectGPU runs the "gpu" collector on the fake driver with NVML
// absent (a library path that does not exist): NVML is unavailable with
// NVML's library-not-found reason, GPUs come from the driver, NUMA and
// link from the fixture tree, the link limit from the max generation and
// width, and a link below its max is a warning only when Finish re-reads
// it at the end of the run.
func TestCollectGPU(t *testing.T) {
	libs := cudatest.Build(t)
	root := fixture(t, "0000:19:00.0", map[string]string{"numa_node": "0", "current_link_speed": "16.0 GT/s PCIe",
		"current_link_width": "16", "max_link_speed": "32.0 GT/s PCIe", "max_link_width": "16"})
	if err := os.MkdirAll(filepath.Join(root, "proc/driver/nvidia"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "proc/driver/nvidia/version"), []byte("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 2024\n"), 0o644)
	var m results.Manifest
	noNVML := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	for _, err := range system.Collect(system.Config{Root: root, Libs: system.Libraries{CUDA: libs.CUDA, CUBLAS: libs.CUBLAS, NVML: noNVML}}, &m) {
		t.Fatal(err)
	}
	status := map[string]results.BackendStatus{}
	for _, s := range m.Backends {
		status[s.Name] = s
	}
	if s := status["cuda"]; !s.Available || !strings.Contains(s.Detail, "driver CUDA 12.8") {
		t.Errorf("cuda status %+v", s)
	}
	if s := status["cublas"]; !s.Available {
		t.Errorf("cublas status %+v", s)
	}
	nv, ok := status["nvml"]
	if !ok {
		t.Fatal("no nvml status")
	}
	if nv.Available || !strings.HasPrefix(nv.Reason, "nvml init: ") || !strings.Contains(nv.Reason, "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("nvml status without the library %+v", nv)
	}
	if len(m.GPUs) != 1 {
		t.Fatalf("GPUs %+v", m.GPUs)
	}
	g := m.GPUs[0]
	if g.Name != "Fake CUDA Device 0" || g.BusID != "0000:19:00.0" || g.NUMANode != 0 || g.PCIeGen != 4 || g.PCIeMaxGen != 5 ||
		g.CUDAOrdinal != 0 || math.Abs(g.LinkGBps-63.015) > 0.001 || g.CUDAVersion != "12.8" || g.DriverVersion != "550.54.15" {
		t.Errorf("gpu %+v", g)
	}
	if len(m.Warnings) != 0 {
		t.Errorf("warnings of an idle link %q", m.Warnings)
	}
	// Under load the link is still gen4: now it is a warning.
	system.Finish(system.Config{Root: root, Libs: system.Libraries{NVML: noNVML}}, &m)
	g = m.GPUs[0]
	if g.PCIeGenEnd != 4 || g.PCIeWidthEnd != 16 || g.ThrottleEnd != nil || g.PCIeReplays != nil {
		t.Errorf("gpu at the end %+v", g)
	}
	if len(m.Warnings) != 1 || m.Warnings[0] != "gpu0 0000:19:00.0: PCIe link runs at gen4 x16 under load, below its max gen5 x16" {
		t.Errorf("warnings at the end %q", m.Warnings)
	}
}
