package system

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kvtier/kvtier/cuda"
	"github.com/kvtier/kvtier/results"
)

func init() {
	Register(Collector{Name: "gpu", Order: 10, Collect: collectGPU})
}

// collectGPU adds the CUDA driver, cuBLAS and NVML to m.Backends and
// every GPU to m.GPUs: from NVML where it loads, else from the CUDA
// driver, each named by its CUDA ordinal (matched by PCI bus id); NUMA
// node and PCIe link from sysfs under c.Root when NVML cannot say. A missing library is a BackendStatus with its reason, never
// an error.
func collectGPU(c Config, m *results.Manifest) error {
	drv, derr := cuda.Open(c.Libs.CUDA)
	m.Backends = append(m.Backends, driverStatus(drv, derr))
	version := 0
	if derr == nil {
		version = drv.Version
	}
	if b, err := cuda.OpenBLAS(c.Libs.CUBLAS, version, c.Libs.CUBLASDirs); err != nil {
		m.Backends = append(m.Backends, results.BackendStatus{Name: "cublas", Reason: err.Error()})
	} else {
		m.Backends = append(m.Backends, results.BackendStatus{Name: "cublas", Available: true, Detail: b.Path})
	}
	gpus, nst := nvmlGPUs(c.nvml())
	m.Backends = append(m.Backends, nst)
	switch {
	case nst.Available && derr == nil:
		cudaOrdinals(drv, gpus)
	case derr == nil:
		gpus = driverGPUs(drv)
		kmod := ParseNVIDIAVersion(readLine(c.Root, "proc/driver/nvidia/version"))
		for i := range gpus {
			gpus[i].DriverVersion = kmod
		}
	}
	linkGPUs(c.Root, gpus)
	topologyGPUs(c.Root, gpus, m)
	m.GPUs = append(m.GPUs, gpus...)
	return nil
}

// driverStatus is the "cuda" backend status of a driver load.
func driverStatus(drv *cuda.Driver, err error) results.BackendStatus {
	if err != nil {
		return results.BackendStatus{Name: "cuda", Reason: err.Error()}
	}
	n, err := drv.DeviceCount()
	st := results.BackendStatus{Name: "cuda", Available: err == nil && n > 0,
		Detail: fmt.Sprintf("driver CUDA %s (%s), %d device(s)", drv.VersionString(), drv.Path, n)}
	switch {
	case err != nil:
		st.Reason = err.Error()
	case n == 0:
		st.Reason = "no CUDA devices"
	}
	return st
}

// linkGPUs fills each GPU's NUMA node, where NVML did not its PCIe link
// from sysfs, and its link limit from the link's max generation and
// width. A link below its max is not a warning here: an idle GPU trains
// its link down; Finish re-reads it under load.
func linkGPUs(root string, gpus []results.GPU) {
	for i := range gpus {
		g := &gpus[i]
		g.NUMANode = NUMANode(root, g.BusID)
		if g.PCIeGen == 0 {
			l := SysfsLink(root, g.BusID)
			g.PCIeGen, g.PCIeWidth, g.PCIeMaxGen, g.PCIeMaxWidth = l.Gen, l.Width, l.MaxGen, l.MaxWidth
		}
		g.LinkGBps = Link{g.PCIeGen, g.PCIeWidth, g.PCIeMaxGen, g.PCIeMaxWidth}.LimitGBps()
	}
}

// driverGPUs lists GPUs through the CUDA driver (no UUID, no link).
func driverGPUs(d *cuda.Driver) []results.GPU {
	n, err := d.DeviceCount()
	if err != nil {
		return nil
	}
	var gpus []results.GPU
	for i := range n {
		info, err := d.Device(i)
		if err != nil {
			continue
		}
		gpus = append(gpus, results.GPU{Index: i, CUDAOrdinal: i, Name: info.Name, BusID: NormalizeBusID(info.BusID),
			NUMANode: -1, MemoryBytes: info.MemoryBytes, CUDAVersion: d.VersionString(), ReplayStart: -1})
	}
	return gpus
}

// ParseNVIDIAVersion returns the kernel module version from
// /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel
// Module  550.54.15  Tue Mar  5 ..." or "... Open Kernel Module for
// x86_64  570.86.15  Release Build ..."), "" if absent.
func ParseNVIDIAVersion(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if !strings.HasPrefix(line, "NVRM version:") {
		return ""
	}
	for f := range strings.FieldsSeq(line) {
		if strings.Count(f, ".") >= 1 && f[0] >= '0' && f[0] <= '9' {
			return f
		}
	}
	return ""
}

// NormalizeBusID turns an NVML or CUDA bus id ("00000000:19:00.0",
// "0000:19:00.0") into sysfs's form ("0000:19:00.0").
func NormalizeBusID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	dom, rest, ok := strings.Cut(s, ":")
	if !ok {
		return s
	}
	if len(dom) > 4 {
		dom = dom[len(dom)-4:]
	}
	return dom + ":" + rest
}

// NUMANode reads the NUMA node of PCI device bus under root, -1 if unknown.
func NUMANode(root, bus string) int {
	n, err := strconv.Atoi(readLine(root, filepath.Join("sys/bus/pci/devices", NormalizeBusID(bus), "numa_node")))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// A Link is a PCIe link's generation and width, current and max.
type Link struct {
	Gen, Width, MaxGen, MaxWidth int
}

// SysfsLink reads the PCIe link of bus from sysfs under root; unknown
// fields are 0.
func SysfsLink(root, bus string) Link {
	dir := filepath.Join("sys/bus/pci/devices", NormalizeBusID(bus))
	read := func(name string) string { return readLine(root, filepath.Join(dir, name)) }
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	return Link{
		Gen:      ParseLinkSpeed(read("current_link_speed")),
		Width:    atoi(read("current_link_width")),
		MaxGen:   ParseLinkSpeed(read("max_link_speed")),
		MaxWidth: atoi(read("max_link_width")),
	}
}

// ParseLinkSpeed maps sysfs's link speed ("32.0 GT/s PCIe", "8 GT/s") to
// the PCIe generation, 0 if unknown.
func ParseLinkSpeed(s string) int {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	for gen, rate := range gtps {
		if gen > 0 && v == rate {
			return gen
		}
	}
	return 0
}

// gtps is the per-lane transfer rate of each PCIe generation in GT/s.
var gtps = [...]float64{0, 2.5, 5, 8, 16, 32, 64}

// LinkGBps is the unidirectional payload limit in GB/s (1e9 B/s) of a
// PCIe link: rate × width × encoding efficiency / 8, with 8b/10b for gen
// 1–2, 128b/130b for gen 3–5 and FLIT (242/256 bytes of payload) for
// gen 6. Gen5 x16: 32 × 16 × 128/130 / 8 = 63.0 GB/s. Packet (TLP/DLLP)
// overhead is not subtracted, so transfers reach about 80–90% of it.
// 0 when gen or width is unknown.
func LinkGBps(gen, width int) float64 {
	if gen <= 0 || gen >= len(gtps) || width <= 0 {
		return 0
	}
	eff := 128.0 / 130
	switch {
	case gen <= 2:
		eff = 0.8
	case gen == 6:
		eff = 242.0 / 256
	}
	return gtps[gen] * float64(width) * eff / 8
}

// LimitGBps is the payload limit of l (LinkGBps) at its max generation
// and width, else at its current ones where the max is unknown.
func (l Link) LimitGBps() float64 {
	if l.MaxGen > 0 && l.MaxWidth > 0 {
		return LinkGBps(l.MaxGen, l.MaxWidth)
	}
	return LinkGBps(l.Gen, l.Width)
}

// DeviceLink returns the PCIe link of the GPU at bus: from NVML
// (libnvidia-ml.so.1) where it loads, else from sysfs under root.
func DeviceLink(root, bus string) Link {
	lib := nvml.New()
	if lib.Init() == nvml.SUCCESS {
		defer lib.Shutdown()
		if d, r := lib.DeviceGetHandleByPciBusId(nvmlBusID(bus)); r == nvml.SUCCESS {
			if l := nvmlLink(d); l.Gen > 0 {
				return l
			}
		}
	}
	return SysfsLink(root, bus)
}
