package mesh

import (
	"net"
	"slices"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
)

// distOrder ranks rdma's PCIe distances, nearest first.
var distOrder = []string{system.DistSameSwitch, system.DistSameRoot, system.DistSameNUMA, system.DistCrossSocket, system.DistUnknown}

// PickNIC chooses the RDMA port a rank reads and serves through: named
// by device when given, else the active port nearest the GPU whose PCI
// bus id is gpuBus by dist (system.Distance under a sysfs root; ties go to
// the first listed), else the first active port. It returns the port and
// its distance from the GPU ("" without a GPU); ok is false when there
// is no such port.
func PickNIC(nics []results.NIC, device, gpuBus string, dist func(a, b string) string) (nic results.NIC, d string, ok bool) {
	best := len(distOrder)
	for _, n := range nics {
		if device != "" && n.Name != device || device == "" && n.State != "ACTIVE" {
			continue
		}
		nd := ""
		rank := 0
		if gpuBus != "" && n.PCIAddress != "" {
			nd = dist(gpuBus, n.PCIAddress)
			rank = slices.Index(distOrder, nd)
		} else if gpuBus != "" {
			nd, rank = system.DistUnknown, len(distOrder)-1
		}
		if !ok || rank < best {
			nic, d, ok, best = n, nd, true, rank
		}
		if device != "" {
			break
		}
	}
	return nic, d, ok
}

// InterfaceOf names the network interface that holds ip ("" if none).
func InterfaceOf(ip net.IP) string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return i.Name
			}
		}
	}
	return ""
}
