package system_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/rdma/rdmatest"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
)

func TestDiscoverFixture(t *testing.T) {
	fixture := rdmatest.SysfsTree(t)
	nics, err := system.Discover(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if len(nics) != 3 {
		t.Fatalf("%d NICs: %+v", len(nics), nics)
	}
	by := map[string]results.NIC{}
	for _, n := range nics {
		by[n.Name] = n
	}
	m := by["mlx5_0"]
	if m.State != "ACTIVE" || m.LinkLayer != "Ethernet" || m.RateGbps != 200 || m.MTU != 4096 ||
		m.NetDev != "ens1f0np0" || m.PCIAddress != "0000:1b:00.0" || m.NUMANode != 0 || len(m.GIDs) != 4 {
		t.Fatalf("mlx5_0: %+v", m)
	}
	if m.GIDs[3].Type != "RoCE v2" || m.GIDs[3].GID != "10.0.1.1" {
		t.Fatalf("mlx5_0 GID 3: %+v", m.GIDs[3])
	}
	r := by["rxe0"]
	if r.NetDev != "eth0" || r.MTU != 1024 || r.PCIAddress != "" || r.NUMANode != -1 || r.RateGbps != 100 {
		t.Fatalf("rxe0: %+v", r)
	}
	if d := by["mlx5_1"]; d.State != "DOWN" || d.LinkLayer != "InfiniBand" || d.RateGbps != 400 || d.NUMANode != 1 {
		t.Fatalf("mlx5_1: %+v", d)
	}
}

func TestDistance(t *testing.T) {
	fixture := rdmatest.SysfsTree(t)
	nic := "0000:1b:00.0"
	for _, tc := range []struct{ gpu, want string }{
		{"00000000:1A:00.0", system.DistSameSwitch}, // NVML's form
		{"0000:20:00.0", system.DistSameRoot},
		{"0000:5e:00.0", system.DistSameNUMA},
		{"0000:af:00.0", system.DistCrossSocket},
		{"0000:99:00.0", system.DistUnknown},
	} {
		if got := system.Distance(fixture, tc.gpu, nic); got != tc.want {
			t.Errorf("Distance(%s, %s) = %q, want %q", tc.gpu, nic, got, tc.want)
		}
	}
	near := results.GPU{Index: 0, BusID: "00000000:1A:00.0"}
	far := results.GPU{Index: 0, CUDAOrdinal: 1, BusID: "0000:af:00.0"}
	n := results.NIC{Name: "mlx5_0", PCIAddress: nic}
	if w := system.FarWarning(fixture, near, n); w != "" {
		t.Errorf("near GPU warned: %s", w)
	}
	if w := system.FarWarning(fixture, far, n); !strings.Contains(w, "across sockets from gpu1 0000:af:00.0") {
		t.Errorf("far GPU warning %q", w)
	}
}

func TestCollectNICFixture(t *testing.T) {
	fixture := rdmatest.SysfsTree(t)
	// The GPUs the GPU collector would have found: NVML's first is CUDA's
	// device 1, near mlx5_0; CUDA's device 0, which a run uses by
	// default, is far from it.
	m := &results.Manifest{GPUs: []results.GPU{{Index: 0, CUDAOrdinal: 1, BusID: "0000:1a:00.0"}, {Index: 1, CUDAOrdinal: 0, BusID: "0000:af:00.0"}}}
	cfg := system.Config{Root: fixture, Libs: system.Libraries{IBVerbs: filepath.Join(fixture, "no-libibverbs.so.1")}}
	if err := system.CollectNIC(cfg, m); err != nil {
		t.Fatal(err)
	}
	if len(m.NICs) != 3 {
		t.Fatalf("NICs %+v", m.NICs)
	}
	var st *results.BackendStatus
	for i := range m.Backends {
		if m.Backends[i].Name == "verbs" {
			st = &m.Backends[i]
		}
	}
	if st == nil || st.Available || !strings.Contains(st.Reason, "no-libibverbs.so.1") {
		t.Fatalf("verbs status %+v: want unavailable, naming the library asked for", st)
	}
	found := false
	for _, w := range m.Warnings {
		found = found || strings.Contains(w, "mlx5_0 is across sockets from gpu0 0000:af:00.0")
	}
	if !found {
		t.Fatalf("no far-NIC warning in %v", m.Warnings)
	}
	for _, n := range m.NICs {
		if n.Name == "mlx5_0" && !slices.Equal(n.GPUDist, []string{"gpu1 0000:1a:00.0: same switch", "gpu0 0000:af:00.0: across sockets"}) {
			t.Fatalf("gpu distance %v", n.GPUDist)
		}
	}
}

// TestCollectNICVerbsAvailable checks the verbs backend's status with a
// libibverbs that loads (the fake, which has ibv_reg_dmabuf_mr) and an
// active port: available, naming the port and how GPU memory registers.
func TestCollectNICVerbsAvailable(t *testing.T) {
	fixture := rdmatest.SysfsTree(t)
	lib := rdmatest.Build(t)
	m := &results.Manifest{}
	if err := system.CollectNIC(system.Config{Root: fixture, Libs: system.Libraries{IBVerbs: lib}}, m); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(m.Backends, func(b results.BackendStatus) bool { return b.Name == "verbs" })
	if i < 0 {
		t.Fatalf("no verbs status in %+v", m.Backends)
	}
	st := m.Backends[i]
	if !st.Available || !strings.Contains(st.Detail, "mlx5_0/1") || !strings.Contains(st.Detail, "DMA-BUF") {
		t.Fatalf("verbs status %+v: want available, mlx5_0/1, DMA-BUF", st)
	}
}
