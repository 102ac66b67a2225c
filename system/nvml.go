package system

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kvtier/kvtier/cuda"
	"github.com/kvtier/kvtier/results"
)

// NVML is read through NVIDIA's go-nvml, which dlopens libnvidia-ml at
// its first Init and answers ERROR_LIBRARY_NOT_FOUND where there is none.
// Only calls every driver since R450 exports are made: go-nvml binds
// symbols lazily, so a call the loaded library lacks would end the
// process instead of returning an error.

// nvml returns the NVML c names: c.NVML where set, else go-nvml loading
// c.Libs.NVML ("" for libnvidia-ml.so.1).
func (c Config) nvml() nvml.Interface {
	if c.NVML != nil {
		return c.NVML
	}
	if c.Libs.NVML != "" {
		return nvml.New(nvml.WithLibraryPath(c.Libs.NVML))
	}
	return nvml.New()
}

// nvmlGPUs lists GPUs through lib.
func nvmlGPUs(lib nvml.Interface) ([]results.GPU, results.BackendStatus) {
	st := results.BackendStatus{Name: "nvml"}
	if r := lib.Init(); r != nvml.SUCCESS {
		st.Reason = "nvml init: " + r.Error()
		return nil, st
	}
	defer lib.Shutdown()
	drvVer, _ := lib.SystemGetDriverVersion()
	cudaVer, _ := lib.SystemGetCudaDriverVersion()
	n, r := lib.DeviceGetCount()
	if r != nvml.SUCCESS {
		st.Reason = "nvml device count: " + r.Error()
		return nil, st
	}
	st.Available = true
	st.Detail = fmt.Sprintf("driver %s, %d device(s)", drvVer, n)
	var gpus []results.GPU
	for i := range n {
		dev, r := lib.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			continue
		}
		g := results.GPU{Index: i, CUDAOrdinal: -1, NUMANode: -1, DriverVersion: drvVer, ReplayStart: -1}
		if cudaVer > 0 {
			g.CUDAVersion = cuda.FormatVersion(cudaVer)
		}
		nvmlIdentity(dev, &g)
		l := nvmlLink(dev)
		g.PCIeGen, g.PCIeWidth, g.PCIeMaxGen, g.PCIeMaxWidth = l.Gen, l.Width, l.MaxGen, l.MaxWidth
		nvmlClocks(dev, &g)
		nvmlState(dev, &g)
		g.ThrottleStart = throttleOf(dev)
		if v, r := dev.GetPcieReplayCounter(); r == nvml.SUCCESS {
			g.ReplayStart = int64(v)
		}
		gpus = append(gpus, g)
	}
	return gpus, st
}

// nvmlIdentity fills a GPU's name, UUID, bus id and memory.
func nvmlIdentity(dev nvml.Device, g *results.GPU) {
	g.Name, _ = dev.GetName()
	g.UUID, _ = dev.GetUUID()
	if pci, r := dev.GetPciInfo(); r == nvml.SUCCESS {
		g.BusID = NormalizeBusID(cString(pci.BusId[:]))
	}
	if mem, r := dev.GetMemoryInfo(); r == nvml.SUCCESS {
		g.MemoryBytes = int64(mem.Total)
	}
}

// nvmlLink reads a GPU's PCIe link; what NVML cannot say is 0. The max
// is what NVML calls possible "with this device and system": the lower
// of the GPU's and the slot's.
func nvmlLink(dev nvml.Device) Link {
	var l Link
	l.Gen, _ = dev.GetCurrPcieLinkGeneration()
	l.Width, _ = dev.GetCurrPcieLinkWidth()
	l.MaxGen, _ = dev.GetMaxPcieLinkGeneration()
	l.MaxWidth, _ = dev.GetMaxPcieLinkWidth()
	return l
}

// nvmlClocks fills a GPU's SM and memory clocks.
func nvmlClocks(dev nvml.Device, g *results.GPU) {
	if v, r := dev.GetClockInfo(nvml.CLOCK_SM); r == nvml.SUCCESS {
		g.SMClockMHz = int(v)
	}
	if v, r := dev.GetMaxClockInfo(nvml.CLOCK_SM); r == nvml.SUCCESS {
		g.MaxSMClockMHz = int(v)
	}
	if v, r := dev.GetClockInfo(nvml.CLOCK_MEM); r == nvml.SUCCESS {
		g.MemClockMHz = int(v)
	}
}

// nvmlState fills a GPU's MIG, persistence and ECC modes.
func nvmlState(dev nvml.Device, g *results.GPU) {
	if cur, _, r := dev.GetMigMode(); r == nvml.SUCCESS {
		g.MIGMode = enabled(cur == nvml.DEVICE_MIG_ENABLE)
	}
	if p, r := dev.GetPersistenceMode(); r == nvml.SUCCESS {
		g.Persistence = enabled(p == nvml.FEATURE_ENABLED)
	}
	if cur, _, r := dev.GetEccMode(); r == nvml.SUCCESS {
		g.ECCMode = enabled(cur == nvml.FEATURE_ENABLED)
	}
}

func enabled(on bool) string {
	if on {
		return "enabled"
	}
	return "disabled"
}

// throttleOf reads a GPU's clock throttle reasons (nil where NVML cannot
// say).
func throttleOf(dev nvml.Device) []string {
	mask, r := dev.GetCurrentClocksThrottleReasons()
	if r != nvml.SUCCESS {
		return nil
	}
	return ThrottleReasons(mask)
}

// throttleNames name nvml.h's clock throttle reason bits as nvidia-smi's
// -q output does (in snake case).
var throttleNames = []struct {
	bit  uint64
	name string
}{
	{nvml.ClocksThrottleReasonGpuIdle, "gpu_idle"},
	{nvml.ClocksThrottleReasonApplicationsClocksSetting, "applications_clocks_setting"},
	{nvml.ClocksThrottleReasonSwPowerCap, "sw_power_cap"},
	{nvml.ClocksThrottleReasonHwSlowdown, "hw_slowdown"},
	{nvml.ClocksThrottleReasonSyncBoost, "sync_boost"},
	{nvml.ClocksThrottleReasonSwThermalSlowdown, "sw_thermal_slowdown"},
	{nvml.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
	{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
	{nvml.ClocksThrottleReasonDisplayClockSetting, "display_clock_setting"},
}

// ThrottleReasons names the bits of an NVML clock throttle reason mask:
// ["none"] for 0, an unnamed bit in hex.
func ThrottleReasons(mask uint64) []string {
	if mask == 0 {
		return []string{"none"}
	}
	var out []string
	for _, t := range throttleNames {
		if mask&t.bit != 0 {
			out = append(out, t.name)
			mask &^= t.bit
		}
	}
	if mask != 0 {
		out = append(out, fmt.Sprintf("0x%x", mask))
	}
	return out
}

// slowdowns are the throttle reasons that hold a bandwidth figure back:
// the GPU protecting itself, not idling or following a setting.
var slowdowns = []string{"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}

// cString is the NUL-terminated string in b.
func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// nvmlBusID is NVML's form of a PCI bus id ("00000000:19:00.0").
func nvmlBusID(bus string) string {
	return "0000" + NormalizeBusID(bus)
}

// cudaOrdinals sets each GPU's CUDA ordinal: the driver's device with the
// same PCI bus id, -1 where the driver sees none (CUDA_VISIBLE_DEVICES).
func cudaOrdinals(drv *cuda.Driver, gpus []results.GPU) {
	n, err := drv.DeviceCount()
	if err != nil {
		return
	}
	ord := map[string]int{}
	for i := range n {
		if info, err := drv.Device(i); err == nil {
			ord[NormalizeBusID(info.BusID)] = i
		}
	}
	for i := range gpus {
		if o, ok := ord[NormalizeBusID(gpus[i].BusID)]; ok {
			gpus[i].CUDAOrdinal = o
		}
	}
}

// GPUName names g in warnings: its CUDA ordinal (what --gpu takes) and
// bus id, "gpu0 0000:19:00.0"; "gpu 0000:19:00.0 (no CUDA ordinal)"
// where CUDA does not see it (CUDA_VISIBLE_DEVICES) or is absent.
func GPUName(g results.GPU) string {
	if g.CUDAOrdinal < 0 {
		return fmt.Sprintf("gpu %s (no CUDA ordinal)", g.BusID)
	}
	return fmt.Sprintf("gpu%d %s", g.CUDAOrdinal, g.BusID)
}
