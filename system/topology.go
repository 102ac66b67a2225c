package system

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/results"
)

// What decides a run on an eight-GPU node besides the GPUs themselves:
// which GPUs share a PCIe switch, whether the bridges above them redirect
// peer-to-peer traffic (ACS), whether an IOMMU translates DMA, and the
// NICs' MTU and flow control. All of it read from sysfs and procfs under
// the collectors' root.

// PCIeSwitch returns the upstream port of the PCIe switch that the device
// at bus sits behind: the bridge below the root port on its path; "" when
// it hangs off a root port or the path is unknown.
func PCIeSwitch(root, bus string) string {
	chain, err := pciChain(root, NormalizeBusID(bus))
	// host bridge, root port, switch upstream port, downstream port, ..., device
	if err != nil || len(chain) < 5 {
		return ""
	}
	return chain[2]
}

// pciExtCapACS is the PCIe extended capability ID of Access Control
// Services; its control register is at offset 6 of the capability, and
// bit 2 of it (P2P Request Redirect) sends peer requests up to the root.
const (
	pciExtCapACS       = 0x000d
	acsCtrlOffset      = 6
	acsP2PReqRedirect  = 1 << 2
	pciConfigSpaceSize = 4096
)

// ACSRedirect reports whether PCI config space cfg (as sysfs's config
// file reads: 4096 bytes as root, 256 else) has an ACS capability with
// P2P Request Redirect enabled; ok is false when the extended space is
// not there to read.
func ACSRedirect(cfg []byte) (redirect, ok bool) {
	if len(cfg) < pciConfigSpaceSize {
		return false, false
	}
	for off, hops := 0x100, 0; off >= 0x100 && off+8 <= len(cfg) && hops < 64; hops++ {
		h := binary.LittleEndian.Uint32(cfg[off:])
		if h == 0 || h == 0xffffffff {
			break
		}
		if h&0xffff == pciExtCapACS {
			return binary.LittleEndian.Uint16(cfg[off+acsCtrlOffset:])&acsP2PReqRedirect != 0, true
		}
		off = int(h >> 20 &^ 3)
	}
	return false, true
}

// ACS describes the bridges above the device at bus: "off", "redirect at
// BRIDGE,..." or "unknown" (a config space not readable in full: not
// root).
func ACS(root, bus string) string {
	chain, err := pciChain(root, NormalizeBusID(bus))
	if err != nil || len(chain) < 3 {
		return "unknown"
	}
	var at []string
	for _, b := range chain[1 : len(chain)-1] {
		cfg, err := readCapped(filepath.Join(root, "sys/bus/pci/devices", b, "config"), pciConfigSpaceSize)
		red, ok := ACSRedirect(cfg)
		if err != nil || !ok {
			return "unknown"
		}
		if red {
			at = append(at, b)
		}
	}
	if len(at) == 0 {
		return "off"
	}
	return "redirect at " + strings.Join(at, ",")
}

// readCapped reads at most n bytes of the file at path.
func readCapped(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	got := 0
	for got < n {
		k, err := f.Read(b[got:])
		got += k
		if err != nil || k == 0 {
			break
		}
	}
	return b[:got], nil
}

// IOMMU describes the host's IOMMU: "off" when no unit is registered
// (sys/class/iommu empty), else "on (UNITS[; OPTIONS])" with the kernel
// command line's iommu options (iommu=pt: DMA passes through untranslated).
func IOMMU(root string) string {
	ents, err := os.ReadDir(filepath.Join(root, "sys/class/iommu"))
	if err != nil && !os.IsNotExist(err) {
		return ""
	}
	if len(ents) == 0 {
		return "off"
	}
	var units []string
	for _, e := range ents {
		units = append(units, e.Name())
	}
	slices.Sort(units)
	var opts []string
	for f := range strings.FieldsSeq(readLine(root, "proc/cmdline")) {
		if strings.Contains(f, "iommu") {
			opts = append(opts, f)
		}
	}
	s := strings.Join(units, ",")
	if len(opts) > 0 {
		s += "; " + strings.Join(opts, " ")
	}
	return "on (" + s + ")"
}

// topologyGPUs fills each GPU's switch, ACS, IOMMU group and its
// domain type, and warns of ACS redirection and of an IOMMU that
// translates GPU DMA.
func topologyGPUs(root string, gpus []results.GPU, m *results.Manifest) {
	m.Host.IOMMU = IOMMU(root)
	for i := range gpus {
		g := &gpus[i]
		bus := NormalizeBusID(g.BusID)
		g.PCIeSwitch = PCIeSwitch(root, bus)
		g.ACS = ACS(root, bus)
		if t, err := os.Readlink(filepath.Join(root, "sys/bus/pci/devices", bus, "iommu_group")); err == nil {
			g.IOMMUGroup = filepath.Base(t)
			g.IOMMUMode = readLine(root, filepath.Join("sys/kernel/iommu_groups", g.IOMMUGroup, "type"))
		}
		var ws []string
		if strings.HasPrefix(g.ACS, "redirect") {
			ws = append(ws, fmt.Sprintf("%s: ACS %s: peer-to-peer and GPUDirect traffic goes up to the root complex", GPUName(*g), g.ACS))
		}
		if IOMMUTranslates(g.IOMMUGroup, g.IOMMUMode, m.Host.IOMMU) {
			ws = append(ws, fmt.Sprintf("%s: the IOMMU translates its DMA (%s): GPUDirect RDMA may fail or slow down",
				GPUName(*g), cmp.Or(g.IOMMUMode, "no iommu=pt")))
		}
		g.Warnings = append(g.Warnings, ws...)
		m.Warnings = append(m.Warnings, ws...)
	}
}

// IOMMUTranslates reports whether the IOMMU translates the DMA of a
// device in IOMMU group group (sysfs's iommu_group link; "" none) whose
// domain type (sys/kernel/iommu_groups/<g>/type) is mode: "DMA" and
// "DMA-FQ" translate, "identity" passes through. Kernels before 5.11
// have no type file ("" mode): then the command line host describes
// (IOMMU's) decides, iommu=pt or iommu.passthrough=1 passing through.
func IOMMUTranslates(group, mode, host string) bool {
	switch {
	case group == "":
		return false
	case mode != "":
		return strings.HasPrefix(mode, "DMA")
	}
	return !strings.Contains(host, "iommu=pt") && !strings.Contains(host, "iommu.passthrough=1")
}

// netdevQoS fills a NIC's netdev MTU and, where its driver exposes them,
// PFC and trust settings (mlx5: qos/pfc, qos/trust).
func netdevQoS(root string, n *results.NIC) {
	if n.NetDev == "" {
		return
	}
	dir := filepath.Join("sys/class/net", n.NetDev)
	fmt.Sscan(readLine(root, filepath.Join(dir, "mtu")), &n.NetDevMTU)
	n.PFC = readLine(root, filepath.Join(dir, "qos/pfc"))
	n.Trust = readLine(root, filepath.Join(dir, "qos/trust"))
}
