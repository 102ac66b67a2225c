package system

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/Mellanox/rdmamap"

	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/results"
)

func init() {
	Register(Collector{Name: "rdma", Order: 20, Collect: collectNIC})
}

// classDir is where sysfs lists RDMA devices, under root.
func classDir(root string) string { return filepath.Join(root, "sys/class/infiniband") }

// deviceNames lists RDMA devices: through rdmamap on the live system,
// from the class directory under any other root (test fixtures).
func deviceNames(root string) []string {
	var names []string
	if filepath.Clean(root) == "/" {
		names = rdmamap.GetRdmaDeviceList()
	} else {
		ents, _ := os.ReadDir(classDir(root))
		for _, e := range ents {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// portNumbers lists a device's ports.
func portNumbers(root, dev string) []int {
	var ports []string
	if filepath.Clean(root) == "/" {
		ports = rdmamap.GetPorts(dev)
	} else {
		ents, _ := os.ReadDir(filepath.Join(classDir(root), dev, "ports"))
		for _, e := range ents {
			ports = append(ports, e.Name())
		}
	}
	var out []int
	for _, p := range ports {
		if n, err := strconv.Atoi(p); err == nil {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// ReadPort describes one port of dev from sysfs under root.
func ReadPort(root, dev string, port int) (results.NIC, error) {
	ddir := filepath.Join(classDir(root), dev)
	pdir := filepath.Join(ddir, "ports", strconv.Itoa(port))
	if _, err := os.Stat(pdir); err != nil {
		return results.NIC{}, fmt.Errorf("rdma: %s port %d: %w", dev, port, err)
	}
	nic := results.NIC{Name: dev, Port: port, NUMANode: -1}
	nic.State = rdma.ParseState(readLine("", filepath.Join(pdir, "state")))
	nic.LinkLayer = readLine("", filepath.Join(pdir, "link_layer"))
	if r, err := rdma.PortRate(root, dev, port); err == nil {
		nic.RateGbps = r
	}
	table, _ := rdma.ReadGIDTable(root, dev, port)
	for _, e := range table {
		if e.Zero() {
			continue
		}
		gid := e.GID
		if g, err := rdma.ParseGID(e.GID); err == nil {
			gid = rdma.FormatGID(g)
		}
		nic.GIDs = append(nic.GIDs, results.GID{Index: e.Index, GID: gid, Type: e.Type})
	}
	// The netdev: the GID table's ndevs, else the PCI function's net dir.
	for _, e := range table {
		if nd := readLine("", filepath.Join(pdir, "gid_attrs/ndevs", strconv.Itoa(e.Index))); nd != "" {
			nic.NetDev = nd
			break
		}
	}
	if nic.NetDev == "" {
		if ents, err := os.ReadDir(filepath.Join(ddir, "device/net")); err == nil && len(ents) > 0 {
			nic.NetDev = ents[0].Name()
		}
	}
	if nic.NetDev != "" && nic.LinkLayer == "Ethernet" {
		if m, err := strconv.Atoi(readLine("", filepath.Join(root, "sys/class/net", nic.NetDev, "mtu"))); err == nil {
			nic.MTU = rdma.RoCEMTU(m)
		}
	}
	if target, err := filepath.EvalSymlinks(filepath.Join(ddir, "device")); err == nil {
		if isPCIAddr(filepath.Base(target)) {
			nic.PCIAddress = filepath.Base(target)
		}
	}
	if n, err := strconv.Atoi(readLine("", filepath.Join(ddir, "device/numa_node"))); err == nil {
		nic.NUMANode = n
	}
	return nic, nil
}

// Discover lists every port of every RDMA device under root.
func Discover(root string) ([]results.NIC, error) {
	var nics []results.NIC
	for _, dev := range deviceNames(root) {
		for _, p := range portNumbers(root, dev) {
			nic, err := ReadPort(root, dev, p)
			if err != nil {
				return nics, err
			}
			nics = append(nics, nic)
		}
	}
	return nics, nil
}

// isPCIAddr reports whether s looks like dddd:bb:dd.f.
func isPCIAddr(s string) bool {
	p := strings.Split(s, ":")
	return len(p) == 3 && len(p[0]) == 4 && len(p[1]) == 2 && strings.Contains(p[2], ".")
}

// PCI distances between two devices, nearest first.
const (
	DistSameSwitch  = "same switch"
	DistSameRoot    = "same root complex"
	DistSameNUMA    = "same NUMA node"
	DistCrossSocket = "across sockets"
	DistUnknown     = "unknown"
)

// pciChain resolves /sys/bus/pci/devices/<addr> to the chain of its
// ancestors: the host bridge ("pci0000:17") then each bridge and the
// device itself.
func pciChain(root, addr string) ([]string, error) {
	p, err := filepath.EvalSymlinks(filepath.Join(root, "sys/bus/pci/devices", addr))
	if err != nil {
		return nil, err
	}
	parts := strings.Split(filepath.ToSlash(p), "/")
	for i, s := range parts {
		if strings.HasPrefix(s, "pci") && strings.Contains(s, ":") {
			return parts[i:], nil
		}
	}
	return nil, fmt.Errorf("rdma: %s is not under a PCI host bridge", p)
}

// Distance classifies the PCIe path between two PCI functions: behind the
// same switch (a common bridge below the root port), under the same root
// complex, on the same NUMA node, or across sockets.
func Distance(root, a, b string) string {
	ca, err1 := pciChain(root, NormalizeBusID(a))
	cb, err2 := pciChain(root, NormalizeBusID(b))
	if err1 != nil || err2 != nil {
		return DistUnknown
	}
	common := 0
	for common < len(ca)-1 && common < len(cb)-1 && ca[common] == cb[common] {
		common++
	}
	switch {
	case common >= 3: // host bridge, root port and at least one switch port
		return DistSameSwitch
	case common >= 1:
		return DistSameRoot
	}
	na := readLine("", filepath.Join(root, "sys/bus/pci/devices", NormalizeBusID(a), "numa_node"))
	nb := readLine("", filepath.Join(root, "sys/bus/pci/devices", NormalizeBusID(b), "numa_node"))
	if na != "" && na == nb && na != "-1" {
		return DistSameNUMA
	}
	if na == "" || nb == "" || na == "-1" || nb == "-1" {
		return DistUnknown
	}
	return DistCrossSocket
}

// FarWarning returns a warning when a NIC is across sockets (or under
// another root complex of the same node) from a GPU, "" when it is close.
func FarWarning(root string, gpu results.GPU, nic results.NIC) string {
	if gpu.BusID == "" || nic.PCIAddress == "" {
		return ""
	}
	d := Distance(root, gpu.BusID, nic.PCIAddress)
	if d == DistCrossSocket || d == DistSameNUMA {
		return fmt.Sprintf("rdma: %s is %s from %s: GPUDirect reads may run at about half rate; prefer a NIC behind the GPU's switch",
			nic.Name, d, GPUName(gpu))
	}
	return ""
}

// collectNIC fills the manifest's NICs and the verbs backend status.
func collectNIC(c Config, m *results.Manifest) error {
	root := c.Root
	nics, err := Discover(root)
	for i := range nics {
		netdevQoS(root, &nics[i])
		for _, g := range m.GPUs {
			if nics[i].PCIAddress == "" || g.BusID == "" {
				continue
			}
			nics[i].GPUDist = append(nics[i].GPUDist, fmt.Sprintf("%s: %s", GPUName(g), Distance(root, g.BusID, nics[i].PCIAddress)))
		}
	}
	m.NICs = append(m.NICs, nics...)
	// The NIC and GPU a run would pick by default: the first active port
	// and CUDA's device 0 (found by bus id, not NVML's index).
	gpu := slices.IndexFunc(m.GPUs, func(g results.GPU) bool { return g.CUDAOrdinal == 0 })
	for _, n := range nics {
		if n.State == "ACTIVE" {
			if gpu >= 0 {
				if w := FarWarning(root, m.GPUs[gpu], n); w != "" {
					m.Warnings = append(m.Warnings, w)
				}
			}
			break
		}
	}
	st := results.BackendStatus{Name: "verbs"}
	libErr := rdma.Load(c.Libs.IBVerbs)
	switch {
	case libErr != nil:
		st.Reason = libErr.Error()
	case len(nics) == 0:
		st.Reason = "no RDMA device"
	default:
		active := 0
		var names []string
		for _, n := range nics {
			if n.State == "ACTIVE" {
				active++
				names = append(names, fmt.Sprintf("%s/%d", n.Name, n.Port))
			}
		}
		if active == 0 {
			st.Reason = "no active RDMA port"
		} else {
			st.Available = true
			st.Detail = "libibverbs (" + dmabufNote(c.Libs.IBVerbs) + "); " + strings.Join(names, ", ")
		}
	}
	m.Backends = append(m.Backends, st)
	return err
}

// dmabufNote says how GPU memory can be registered with the libibverbs
// at lib: by DMA-BUF where it has ibv_reg_dmabuf_mr (rdma-core 34 and
// later), else only through the nvidia-peermem module.
func dmabufNote(lib string) string {
	if rdma.HasDMABuf(lib) {
		return "GPU memory by DMA-BUF: ibv_reg_dmabuf_mr"
	}
	return "no ibv_reg_dmabuf_mr: GPU memory through nvidia-peermem only"
}
