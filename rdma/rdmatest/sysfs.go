package rdmatest

import (
	"os"
	"path/filepath"
	"testing"
)

// SysfsTree writes a sysfs fixture under a new temporary directory and
// returns it, for tests of GID selection, NIC discovery and PCIe
// distances. It is made at test time because its paths hold ':' and
// symbolic links, which module zips refuse.
//
// Three RDMA devices: mlx5_0 (RoCE over ens1f0np0, MTU 9000, 200 Gb/s,
// ACTIVE, GIDs 0-1 link-local, 2-3 IPv4 10.0.1.1 as v1 and v2, 4 empty,
// behind a PCIe switch at 0000:1b:00.0 on NUMA node 0), mlx5_1
// (InfiniBand, 400 Gb/s, DOWN, at 0000:af:00.0 on node 1) and rxe0
// (soft-RoCE over eth0, MTU 1500, 100 Gb/s, no PCI device). PCI functions
// 0000:1a:00.0 (same switch as mlx5_0), 0000:20:00.0 (same root complex),
// 0000:5e:00.0 (another root complex, node 0) and 0000:af:00.0 (node 1)
// stand for GPUs.
func SysfsTree(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	for path, body := range sysfsFiles {
		write(t, filepath.Join(root, path), body)
	}
	for link, target := range sysfsLinks {
		p := filepath.Join(root, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func write(t testing.TB, path, body string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	switchPort = "devices/pci0000:17/0000:17:01.0/0000:18:00.0"
	mlx50      = "sys/class/infiniband/mlx5_0/ports/1/"
	mlx51      = "sys/class/infiniband/mlx5_1/ports/1/"
	rxe0       = "sys/class/infiniband/rxe0/ports/1/"
)

var sysfsFiles = map[string]string{
	mlx50 + "gid_attrs/ndevs/0": "ens1f0np0", mlx50 + "gid_attrs/ndevs/1": "ens1f0np0",
	mlx50 + "gid_attrs/ndevs/2": "ens1f0np0", mlx50 + "gid_attrs/ndevs/3": "ens1f0np0",
	mlx50 + "gid_attrs/types/0": "IB/RoCE v1", mlx50 + "gid_attrs/types/1": "RoCE v2",
	mlx50 + "gid_attrs/types/2": "IB/RoCE v1", mlx50 + "gid_attrs/types/3": "RoCE v2",
	mlx50 + "gids/0":     "fe80:0000:0000:0000:ba3f:d2ff:fe12:3456",
	mlx50 + "gids/1":     "fe80:0000:0000:0000:ba3f:d2ff:fe12:3456",
	mlx50 + "gids/2":     "0000:0000:0000:0000:0000:ffff:0a00:0101",
	mlx50 + "gids/3":     "0000:0000:0000:0000:0000:ffff:0a00:0101",
	mlx50 + "gids/4":     "0000:0000:0000:0000:0000:0000:0000:0000",
	mlx50 + "link_layer": "Ethernet", mlx50 + "rate": "200 Gb/sec (4X HDR)", mlx50 + "state": "4: ACTIVE",

	mlx51 + "gid_attrs/types/0": "IB/RoCE v1",
	mlx51 + "gids/0":            "fe80:0000:0000:0000:0000:0000:0000:0001",
	mlx51 + "link_layer":        "InfiniBand", mlx51 + "rate": "400 Gb/sec (4X NDR)", mlx51 + "state": "1: DOWN",

	rxe0 + "gid_attrs/ndevs/0": "eth0", rxe0 + "gid_attrs/ndevs/1": "eth0",
	rxe0 + "gid_attrs/types/0": "RoCE v2", rxe0 + "gid_attrs/types/1": "RoCE v2",
	rxe0 + "gids/0":     "fe80:0000:0000:0000:5054:00ff:fe12:3456",
	rxe0 + "gids/1":     "0000:0000:0000:0000:0000:ffff:0a00:020f",
	rxe0 + "gids/2":     "0000:0000:0000:0000:0000:0000:0000:0000",
	rxe0 + "link_layer": "Ethernet", rxe0 + "rate": "100 Gb/sec (4X EDR)", rxe0 + "state": "4: ACTIVE",

	"sys/class/net/ens1f0np0/mtu": "9000",
	"sys/class/net/eth0/mtu":      "1500",

	"sys/" + switchPort + "/0000:19:00.0/0000:1a:00.0/numa_node": "0",
	"sys/" + switchPort + "/0000:19:04.0/0000:1b:00.0/numa_node": "0",
	"sys/devices/pci0000:17/0000:17:02.0/0000:20:00.0/numa_node": "0",
	"sys/devices/pci0000:5d/0000:5d:01.0/0000:5e:00.0/numa_node": "0",
	"sys/devices/pci0000:ae/0000:ae:01.0/0000:af:00.0/numa_node": "1",
}

var sysfsLinks = map[string]string{
	"sys/bus/pci/devices/0000:1a:00.0":   "../../../" + switchPort + "/0000:19:00.0/0000:1a:00.0",
	"sys/bus/pci/devices/0000:1b:00.0":   "../../../" + switchPort + "/0000:19:04.0/0000:1b:00.0",
	"sys/bus/pci/devices/0000:20:00.0":   "../../../devices/pci0000:17/0000:17:02.0/0000:20:00.0",
	"sys/bus/pci/devices/0000:5e:00.0":   "../../../devices/pci0000:5d/0000:5d:01.0/0000:5e:00.0",
	"sys/bus/pci/devices/0000:af:00.0":   "../../../devices/pci0000:ae/0000:ae:01.0/0000:af:00.0",
	"sys/class/infiniband/mlx5_0/device": "../../../" + switchPort + "/0000:19:04.0/0000:1b:00.0",
	"sys/class/infiniband/mlx5_1/device": "../../../devices/pci0000:ae/0000:ae:01.0/0000:af:00.0",
}
