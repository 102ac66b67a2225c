package system_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/rdma/rdmatest"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
)

// acsConfig is a 4096-byte PCI config space whose extended capabilities
// are AER at 0x100 then ACS at 0x148 with control word ctrl.
func acsConfig(ctrl uint16) []byte {
	b := make([]byte, 4096)
	binary.LittleEndian.PutUint32(b[0x100:], 0x0001|1<<16|0x148<<20) // AER, next 0x148
	binary.LittleEndian.PutUint32(b[0x148:], 0x000d|1<<16)           // ACS, last
	binary.LittleEndian.PutUint16(b[0x148+6:], ctrl)
	return b
}

// hgxTree writes the sysfs of an eight-GPU node as the fake driver with
// FAKECUDA_DEVICES=8 numbers its GPUs (buses 0x19 to 0x20): GPUs 0-3
// behind the switch at 0000:02:00.0 (ACS redirecting, GPU 2 trained
// down to gen4 x8), GPUs 4-7 behind 0000:82:00.0 on the other socket;
// an IOMMU (dmar0, dmar1) without iommu=pt, every GPU in a group; a NIC
// netdev with MTU 4200 and mlx5's qos files.
func hgxTree(t *testing.T) string {
	root := t.TempDir()
	write := func(rel string, b []byte) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	for gpu := range 8 {
		sw, rp, node := "0000:02:00.0", "0000:00:01.0", "0"
		host := "pci0000:00"
		if gpu >= 4 {
			sw, rp, node, host = "0000:82:00.0", "0000:80:01.0", "1", "pci0000:80"
		}
		down := fmt.Sprintf("0000:%02x:%02x.0", 3+gpu/4*0x80, gpu%4)
		bus := fmt.Sprintf("0000:%02x:00.0", 0x19+gpu)
		dev := filepath.Join("sys/devices", host, rp, sw, down, bus)
		speed, width := "32.0 GT/s PCIe", "16"
		if gpu == 2 {
			speed, width = "16.0 GT/s PCIe", "8"
		}
		for k, v := range map[string]string{"numa_node": node, "current_link_speed": speed, "current_link_width": width,
			"max_link_speed": "32.0 GT/s PCIe", "max_link_width": "16"} {
			write(filepath.Join(dev, k), []byte(v+"\n"))
		}
		link(filepath.Join(root, dev), filepath.Join("sys/bus/pci/devices", bus))
		link(filepath.Join(root, "sys/kernel/iommu_groups", fmt.Sprint(40+gpu)), filepath.Join(dev, "iommu_group"))
		for _, b := range []string{filepath.Join(host, rp), filepath.Join(host, rp, sw), filepath.Join(host, rp, sw, down)} {
			ctrl := uint16(0x1d) // source validation, request and completion redirect, upstream forwarding
			if gpu >= 4 {
				ctrl = 0
			}
			write(filepath.Join("sys/devices", b, "config"), acsConfig(ctrl))
			if _, err := os.Lstat(filepath.Join(root, "sys/bus/pci/devices", filepath.Base(b))); err != nil {
				link(filepath.Join(root, "sys/devices", b), filepath.Join("sys/bus/pci/devices", filepath.Base(b)))
			}
		}
	}
	write("sys/class/iommu/dmar0/x", nil)
	write("sys/class/iommu/dmar1/x", nil)
	write("proc/cmdline", []byte("BOOT_IMAGE=/vmlinuz ro intel_iommu=on quiet\n"))
	write("sys/class/net/ens1f0np0/mtu", []byte("4200\n"))
	write("sys/class/net/ens1f0np0/qos/pfc", []byte("0,0,0,1,0,0,0,0\n"))
	write("sys/class/net/ens1f0np0/qos/trust", []byte("dscp\n"))
	return root
}

// TestCollectEightGPUs: on a node of eight GPUs behind two PCIe switches
// the manifest records each GPU's switch, link (current against max, a
// warning where still trained down at the end of the run), ACS and
// IOMMU state.
func TestCollectEightGPUs(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "8")
	libs := cudatest.Build(t)
	root := hgxTree(t)
	var m results.Manifest
	for _, err := range system.Collect(system.Config{Root: root, Libs: system.Libraries{CUDA: libs.CUDA, CUBLAS: libs.CUBLAS}}, &m) {
		t.Fatal(err)
	}
	if len(m.GPUs) != 8 {
		t.Fatalf("%d GPUs", len(m.GPUs))
	}
	if m.GPUs[0].PCIeGen > 0 && m.GPUs[0].UUID != "" {
		t.Skip("a real NVML is installed; the fixture does not apply")
	}
	if m.Host.IOMMU != "on (dmar0,dmar1; intel_iommu=on)" {
		t.Errorf("host IOMMU %q", m.Host.IOMMU)
	}
	for i, g := range m.GPUs {
		sw, acs, node := "0000:02:00.0", "redirect at 0000:00:01.0,0000:02:00.0,0000:03:00.0", 0
		if i >= 4 {
			sw, acs, node = "0000:82:00.0", "off", 1
		}
		if i < 4 {
			acs = strings.Replace(acs, "0000:03:00.0", fmt.Sprintf("0000:03:%02x.0", i%4), 1)
		}
		if g.PCIeSwitch != sw || g.ACS != acs || g.NUMANode != node || g.IOMMUGroup != fmt.Sprint(40+i) {
			t.Errorf("gpu%d: switch %q acs %q node %d group %q", i, g.PCIeSwitch, g.ACS, g.NUMANode, g.IOMMUGroup)
		}
	}
	if g := m.GPUs[2]; g.PCIeGen != 4 || g.PCIeWidth != 8 || g.PCIeMaxGen != 5 || g.PCIeMaxWidth != 16 {
		t.Errorf("gpu2 link %+v", g)
	}
	if strings.Contains(strings.Join(m.Warnings, "\n"), "below its max") {
		t.Errorf("a link below its max is a warning before the run: %q", m.Warnings)
	}
	system.Finish(system.Config{Root: root}, &m)
	all := strings.Join(m.Warnings, "\n")
	for _, want := range []string{"gpu2 0000:1b:00.0: PCIe link runs at gen4 x8 under load, below its max gen5 x16", "gpu0 0000:19:00.0: ACS redirect at", "gpu7 0000:20:00.0: the IOMMU translates its DMA"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "gpu4 0000:1d:00.0: ACS") || strings.Count(all, "below its max") != 1 {
		t.Errorf("warnings:\n%s", all)
	}
}

func TestACSRedirect(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg          []byte
		redirect, ok bool
	}{
		{acsConfig(0x1d), true, true}, {acsConfig(0x01), false, true}, {make([]byte, 256), false, false}, {make([]byte, 4096), false, true},
	} {
		if r, ok := system.ACSRedirect(c.cfg); r != c.redirect || ok != c.ok {
			t.Errorf("ACSRedirect = %v, %v; want %v, %v", r, ok, c.redirect, c.ok)
		}
	}
}

// TestNICQoS: a NIC's netdev MTU and mlx5's PFC and trust files reach
// the manifest.
func TestNICQoS(t *testing.T) {
	root := rdmatest.SysfsTree(t)
	for rel, v := range map[string]string{"mtu": "4200", "qos/pfc": "0,0,0,1,0,0,0,0", "qos/trust": "dscp"} {
		p := filepath.Join(root, "sys/class/net/ens1f0np0", rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var m results.Manifest
	for _, err := range system.Collect(system.Config{Root: root, Libs: system.Libraries{CUDA: filepath.Join(root, "none")}}, &m) {
		t.Fatal(err)
	}
	for _, n := range m.NICs {
		if n.Name == "mlx5_0" && (n.NetDevMTU != 4200 || n.PFC != "0,0,0,1,0,0,0,0" || n.Trust != "dscp") {
			t.Errorf("mlx5_0: %+v", n)
		}
	}
}
