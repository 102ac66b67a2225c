package system_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
)

// A fakeGPU is one device of fakeNVML; tests change it between calls.
type fakeGPU struct {
	bus                          string // NVML's form
	gen, width, maxGen, maxWidth int
	throttle                     uint64
	replays                      int
	mig, persistent, ecc         bool
}

// fakeNVML is go-nvml's mock answering for gpus, in NVML index order,
// with driver 550.54.15 (CUDA 12.8); it counts Init and Shutdown.
func fakeNVML(gpus []*fakeGPU) (*mock.Interface, *int) {
	inits := new(int)
	return &mock.Interface{
		InitFunc:                       func() nvml.Return { *inits++; return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { *inits--; return nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return "550.54.15", nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return 12080, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return len(gpus), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(gpus) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return fakeDevice(gpus[i]), nvml.SUCCESS
		},
		DeviceGetHandleByPciBusIdFunc: func(bus string) (nvml.Device, nvml.Return) {
			for _, g := range gpus {
				if strings.EqualFold(g.bus, bus) {
					return fakeDevice(g), nvml.SUCCESS
				}
			}
			return nil, nvml.ERROR_NOT_FOUND
		},
	}, inits
}

func fakeDevice(g *fakeGPU) *mock.Device {
	ok := func(v int) (int, nvml.Return) { return v, nvml.SUCCESS }
	state := func(on bool) nvml.EnableState {
		if on {
			return nvml.FEATURE_ENABLED
		}
		return nvml.FEATURE_DISABLED
	}
	return &mock.Device{
		GetNameFunc: func() (string, nvml.Return) { return "NVIDIA H100 80GB HBM3", nvml.SUCCESS },
		GetUUIDFunc: func() (string, nvml.Return) { return "GPU-" + g.bus, nvml.SUCCESS },
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			for i, c := range []byte(g.bus) {
				p.BusId[i] = int8(c)
			}
			return p, nvml.SUCCESS
		},
		GetMemoryInfoFunc:             func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 85520809984}, nvml.SUCCESS },
		GetCurrPcieLinkGenerationFunc: func() (int, nvml.Return) { return ok(g.gen) },
		GetCurrPcieLinkWidthFunc:      func() (int, nvml.Return) { return ok(g.width) },
		GetMaxPcieLinkGenerationFunc:  func() (int, nvml.Return) { return ok(g.maxGen) },
		GetMaxPcieLinkWidthFunc:       func() (int, nvml.Return) { return ok(g.maxWidth) },
		GetClockInfoFunc:              func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS },
		GetMaxClockInfoFunc:           func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS },
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if g.mig {
				return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
			}
			return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
		},
		GetPersistenceModeFunc: func() (nvml.EnableState, nvml.Return) { return state(g.persistent), nvml.SUCCESS },
		GetEccModeFunc: func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
			return state(g.ecc), state(g.ecc), nvml.SUCCESS
		},
		GetCurrentClocksThrottleReasonsFunc: func() (uint64, nvml.Return) { return g.throttle, nvml.SUCCESS },
		GetPcieReplayCounterFunc:            func() (int, nvml.Return) { return ok(g.replays) },
	}
}

// TestCollectGPUNVML runs the "gpu" collector with go-nvml's mock as
// NVML beside the fake CUDA driver, whose one device (CUDA ordinal 0) is
// NVML's index 1, as under CUDA_VISIBLE_DEVICES: GPUs are matched by bus
// id and warnings name CUDA's ordinal. At the start the link is idle
// (gen1): its limit comes from the max, and no warning; the manifest has
// the modes and throttle reasons. Finish re-reads under load: a link
// still below its max, a thermal slowdown and replays are warnings.
func TestCollectGPUNVML(t *testing.T) {
	libs := cudatest.Build(t)
	root := fixture(t, "0000:19:00.0", map[string]string{"numa_node": "1"})
	hidden := &fakeGPU{bus: "00000000:3B:00.0", gen: 5, width: 16, maxGen: 5, maxWidth: 16, throttle: 1, replays: 7, mig: true}
	visible := &fakeGPU{bus: "00000000:19:00.0", gen: 1, width: 16, maxGen: 5, maxWidth: 16, replays: 10, persistent: true, ecc: true}
	lib, inits := fakeNVML([]*fakeGPU{hidden, visible})
	cfg := system.Config{Root: root, Libs: system.Libraries{CUDA: libs.CUDA, CUBLAS: libs.CUBLAS}, NVML: lib}
	var m results.Manifest
	for _, err := range system.Collect(cfg, &m) {
		t.Fatal(err)
	}
	i := slices.IndexFunc(m.Backends, func(b results.BackendStatus) bool { return b.Name == "nvml" })
	if i < 0 || !m.Backends[i].Available || m.Backends[i].Detail != "driver 550.54.15, 2 device(s)" {
		t.Fatalf("nvml status in %+v", m.Backends)
	}
	if len(m.GPUs) != 2 {
		t.Fatalf("GPUs %+v", m.GPUs)
	}
	h, v := m.GPUs[0], m.GPUs[1]
	if h.Index != 0 || h.CUDAOrdinal != -1 || h.BusID != "0000:3b:00.0" || h.MIGMode != "enabled" || h.Persistence != "disabled" ||
		h.ECCMode != "disabled" || !slices.Equal(h.ThrottleStart, []string{"gpu_idle"}) {
		t.Errorf("gpu hidden from CUDA %+v", h)
	}
	if v.Index != 1 || v.CUDAOrdinal != 0 || v.BusID != "0000:19:00.0" || v.NUMANode != 1 || v.MIGMode != "disabled" ||
		v.Persistence != "enabled" || v.ECCMode != "enabled" || !slices.Equal(v.ThrottleStart, []string{"none"}) ||
		v.PCIeGen != 1 || v.PCIeMaxGen != 5 || v.LinkGBps < 63 || v.LinkGBps > 63.1 || v.DriverVersion != "550.54.15" || v.CUDAVersion != "12.8" {
		t.Errorf("gpu visible to CUDA %+v", v)
	}
	if len(m.Warnings) != 0 {
		t.Errorf("warnings at the start %q", m.Warnings)
	}
	visible.gen, visible.throttle, visible.replays = 4, nvml.ClocksThrottleReasonHwThermalSlowdown, 13
	system.Finish(cfg, &m)
	h, v = m.GPUs[0], m.GPUs[1]
	if h.PCIeGenEnd != 5 || h.PCIeReplays == nil || *h.PCIeReplays != 0 || !slices.Equal(h.ThrottleEnd, []string{"gpu_idle"}) {
		t.Errorf("gpu hidden from CUDA at the end %+v", h)
	}
	if v.PCIeGenEnd != 4 || v.PCIeWidthEnd != 16 || v.PCIeReplays == nil || *v.PCIeReplays != 3 {
		t.Errorf("gpu visible to CUDA at the end %+v", v)
	}
	want := []string{
		"gpu0 0000:19:00.0: PCIe link runs at gen4 x16 under load, below its max gen5 x16",
		"gpu0 0000:19:00.0: clocks held back at the end of the run (hw_thermal_slowdown)",
		"gpu0 0000:19:00.0: 3 PCIe replays during the run (link-level retransmissions cost bandwidth)",
	}
	if !slices.Equal(m.Warnings, want) || !slices.Equal(v.Warnings, want) {
		t.Errorf("warnings at the end %q, want %q", m.Warnings, want)
	}
	if *inits != 0 {
		t.Errorf("%d NVML Init calls without their Shutdown", *inits)
	}
}

func TestThrottleReasons(t *testing.T) {
	for _, tt := range []struct {
		mask uint64
		want []string
	}{
		{0, []string{"none"}},
		{1, []string{"gpu_idle"}},
		{0x4 | 0x20, []string{"sw_power_cap", "sw_thermal_slowdown"}},
		{0x80 | 0x1000, []string{"hw_power_brake_slowdown", "0x1000"}},
	} {
		if got := system.ThrottleReasons(tt.mask); !slices.Equal(got, tt.want) {
			t.Errorf("ThrottleReasons(%#x) = %q, want %q", tt.mask, got, tt.want)
		}
	}
}

// TestIOMMUMode reads the IOMMU domain type of each GPU's group from
// sysfs: a DMA-FQ domain translates whatever the command line says, an
// identity domain passes through though the command line has no
// iommu=pt; without the type file (kernels before 5.11) the command line
// decides.
func TestIOMMUMode(t *testing.T) {
	for _, tt := range []struct {
		mode, cmdline string
		warn          bool
	}{
		{"DMA-FQ", "iommu=pt", true},
		{"DMA", "", true},
		{"identity", "", false},
		{"", "quiet iommu.passthrough=1", false},
		{"", "quiet", true},
	} {
		root := fixture(t, "0000:19:00.0", nil)
		dev := filepath.Join(root, "sys/bus/pci/devices/0000:19:00.0")
		group := filepath.Join(root, "sys/kernel/iommu_groups/7")
		os.MkdirAll(filepath.Join(group, "devices"), 0o755)
		os.MkdirAll(filepath.Join(root, "sys/class/iommu/dmar0"), 0o755)
		os.MkdirAll(filepath.Join(root, "proc"), 0o755)
		os.WriteFile(filepath.Join(root, "proc/cmdline"), []byte(tt.cmdline+"\n"), 0o644)
		if tt.mode != "" {
			os.WriteFile(filepath.Join(group, "type"), []byte(tt.mode+"\n"), 0o644)
		}
		if err := os.Symlink("../../../../kernel/iommu_groups/7", filepath.Join(dev, "iommu_group")); err != nil {
			t.Fatal(err)
		}
		var m results.Manifest
		gpu := &fakeGPU{bus: "00000000:19:00.0", gen: 5, width: 16, maxGen: 5, maxWidth: 16}
		lib, _ := fakeNVML([]*fakeGPU{gpu})
		for _, err := range system.Collect(system.Config{Root: root, NVML: lib, Libs: system.Libraries{CUDA: "/nonexistent/libcuda.so.1"}}, &m) {
			t.Fatal(err)
		}
		g := m.GPUs[0]
		warned := slices.ContainsFunc(m.Warnings, func(w string) bool { return strings.Contains(w, "the IOMMU translates its DMA") })
		if g.IOMMUGroup != "7" || g.IOMMUMode != tt.mode || warned != tt.warn {
			t.Errorf("type %q, cmdline %q: group %q mode %q, warned %v (want %v): %q", tt.mode, tt.cmdline, g.IOMMUGroup, g.IOMMUMode, warned, tt.warn, m.Warnings)
		}
	}
}
