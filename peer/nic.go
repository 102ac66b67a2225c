package peer

import (
	"fmt"
	"slices"

	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
)

// distRank ranks system's PCIe distances, nearest first.
var distRank = []string{system.DistSameSwitch, system.DistSameRoot, system.DistSameNUMA, system.DistCrossSocket, system.DistUnknown}

// PickDevice resolves the RDMA device of cfg ("" or rdma.AutoDevice: pick
// one) for reads to or from the GPU whose PCI bus id is gpuBus ("" when no
// GPU is in use), from the ports sysfs lists under cfg.Root: the active
// port nearest the GPU (behind the same PCIe switch, then the same root
// complex, then the same NUMA node; ties to the first listed), else the
// first active port. A named device is kept. It returns the config with
// Device and Port set (left to libibverbs' first active port where sysfs
// lists none) and why that device, for the device_reason column.
func PickDevice(cfg rdma.Config, gpuBus string) (rdma.Config, string) {
	if cfg.Device != "" && cfg.Device != rdma.AutoDevice {
		return cfg, "named by --rdma-device"
	}
	cfg.Device = ""
	root := cfg.Root
	if root == "" {
		root = "/"
	}
	nics, _ := system.Discover(root)
	nic, d, ok := nearestNIC(nics, gpuBus, func(a, b string) string { return system.Distance(root, a, b) })
	switch {
	case !ok:
		return cfg, "first active port libibverbs lists (no active port in sysfs)"
	case gpuBus == "":
		cfg.Device, cfg.Port = nic.Name, nic.Port
		return cfg, "first active port (no GPU in use)"
	}
	cfg.Device, cfg.Port = nic.Name, nic.Port
	return cfg, fmt.Sprintf("active port nearest GPU %s (%s)", gpuBus, d)
}

// nearestNIC returns the active port of nics nearest the PCI function
// gpuBus by dist (the first active one when gpuBus is ""), with its
// distance; ok is false when no port is active.
func nearestNIC(nics []results.NIC, gpuBus string, dist func(a, b string) string) (nic results.NIC, d string, ok bool) {
	best := len(distRank)
	for _, n := range nics {
		if n.State != "ACTIVE" {
			continue
		}
		nd, rank := system.DistUnknown, len(distRank)-1
		if gpuBus != "" && n.PCIAddress != "" {
			nd = dist(gpuBus, n.PCIAddress)
			rank = slices.Index(distRank, nd)
		}
		if !ok || rank < best {
			nic, d, ok, best = n, nd, true, rank
		}
	}
	return nic, d, ok
}
