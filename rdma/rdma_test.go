package rdma

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/kvtier/kvtier/rdma/rdmatest"
	"github.com/kvtier/kvtier/results"
)

const fixture = "testdata"

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"200 Gb/sec (4X HDR)", 200, true},
		{"100 Gb/sec (4X EDR)", 100, true},
		{"2.5 Gb/sec (1X SDR)", 2.5, true},
		{"", 0, false},
		{"fast", 0, false},
	} {
		got, err := ParseRate(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestMTU(t *testing.T) {
	for _, tc := range []struct{ netdev, want int }{{1500, 1024}, {9000, 4096}, {4200, 4096}, {2100, 1024}, {2200, 2048}, {0, 0}} {
		if got := RoCEMTU(tc.netdev); got != tc.want {
			t.Errorf("RoCEMTU(%d) = %d, want %d", tc.netdev, got, tc.want)
		}
	}
	for b, e := range map[int]int{256: 1, 1024: 3, 4096: 5, 100: 0, 8192: 5} {
		if got := IBMTU(b); got != e {
			t.Errorf("IBMTU(%d) = %d, want %d", b, got, e)
		}
	}
	if MTUBytes(3) != 1024 || MTUBytes(0) != 0 {
		t.Error("MTUBytes")
	}
	if RdAtom(16) != 16 || RdAtom(128) != 16 || RdAtom(0) != 1 || RdAtom(4) != 4 {
		t.Error("RdAtom")
	}
}

func TestSelectGID(t *testing.T) {
	mlx, err := ReadGIDTable(fixture, "mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	rxe, err := ReadGIDTable(fixture, "rxe0", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		table     []GIDEntry
		req       int
		ll        string
		want      int
		errSubstr string
	}{
		{"mlx5 auto picks the IPv4 RoCE v2 entry", mlx, -1, "Ethernet", 3, ""},
		{"rxe auto picks index 1", rxe, -1, "Ethernet", 1, ""},
		{"override", mlx, 2, "Ethernet", 2, ""},
		{"missing index", rxe, 99, "Ethernet", 0, "GID index 99 does not exist"},
		{"empty index", mlx, 4, "Ethernet", 0, "is empty"},
		{"infiniband needs none", nil, -1, "InfiniBand", -1, ""},
		{"no v2", []GIDEntry{{0, "fe80::1", "RoCE v2"}, {1, "::ffff:10.0.0.1", "IB/RoCE v1"}}, -1, "Ethernet", 0, "no RoCE v2 GID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SelectGID(tc.table, tc.req, tc.ll, "dev port 1")
			if tc.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
					t.Fatalf("got %d, %v; want error with %q", got, err, tc.errSubstr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestGIDFormat(t *testing.T) {
	g, err := ParseGID("0000:0000:0000:0000:0000:ffff:0a00:020f")
	if err != nil {
		t.Fatal(err)
	}
	if s := FormatGID(g); s != "10.0.2.15" {
		t.Fatalf("FormatGID = %q", s)
	}
	if _, err := ParseGID("zz"); err == nil {
		t.Fatal("bad GID parsed")
	}
}

func TestDiscoverFixture(t *testing.T) {
	nics, err := Discover(fixture)
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
	nic := "0000:1b:00.0"
	for _, tc := range []struct{ gpu, want string }{
		{"00000000:1A:00.0", DistSameSwitch}, // NVML's form
		{"0000:20:00.0", DistSameRoot},
		{"0000:5e:00.0", DistSameNUMA},
		{"0000:af:00.0", DistCrossSocket},
		{"0000:99:00.0", DistUnknown},
	} {
		if got := Distance(fixture, tc.gpu, nic); got != tc.want {
			t.Errorf("Distance(%s, %s) = %q, want %q", tc.gpu, nic, got, tc.want)
		}
	}
	near := results.GPU{Index: 0, BusID: "00000000:1A:00.0"}
	far := results.GPU{Index: 1, BusID: "0000:af:00.0"}
	n := results.NIC{Name: "mlx5_0", PCIAddress: nic}
	if w := FarWarning(fixture, near, n); w != "" {
		t.Errorf("near GPU warned: %s", w)
	}
	if w := FarWarning(fixture, far, n); !strings.Contains(w, "across sockets") || !strings.Contains(w, "gpu1") {
		t.Errorf("far GPU warning %q", w)
	}
}

func TestCollectFixture(t *testing.T) {
	m := &results.Manifest{GPUs: []results.GPU{{Index: 0, BusID: "0000:af:00.0"}}}
	if err := collect(fixture, m); err != nil {
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
	if st == nil || (!st.Available && st.Reason == "") {
		t.Fatalf("verbs status %+v", st)
	}
	found := false
	for _, w := range m.Warnings {
		found = found || strings.Contains(w, "across sockets")
	}
	if !found {
		t.Fatalf("no far-NIC warning in %v", m.Warnings)
	}
	for _, n := range m.NICs {
		if n.Name == "mlx5_0" && (len(n.GPUDist) != 1 || n.GPUDist[0] != "gpu0: across sockets") {
			t.Fatalf("gpu distance %v", n.GPUDist)
		}
	}
}

func TestPlanSpreadsOverQPs(t *testing.T) {
	reads := []WR{
		{Local: 0, Remote: 1000, Len: 100, LKey: 1, RKey: 2},
		{Local: 100, Remote: 5000, Len: 250, LKey: 1, RKey: 2},
	}
	wrs, qstart := Plan(reads, 2, 100)
	// 100 + 100 + 100 + 50: four requests, dealt out round-robin.
	if len(wrs) != 4 || len(qstart) != 3 || qstart[1] != 2 || qstart[2] != 4 {
		t.Fatalf("plan %+v %v", wrs, qstart)
	}
	var total uint32
	for q := 0; q < 2; q++ {
		for _, w := range wrs[qstart[q]:qstart[q+1]] {
			if w.QP != q {
				t.Fatalf("request %+v in QP %d's group", w, q)
			}
			if w.Len > 100 || w.Remote-w.Local != reads[0].Remote-reads[0].Local && w.Remote-w.Local != reads[1].Remote-reads[1].Local {
				t.Fatalf("bad split %+v", w)
			}
			total += w.Len
		}
	}
	if total != 350 {
		t.Fatalf("payload %d", total)
	}
	// Batches keep each batch's per-QP groups and cover the plan once.
	bs, starts := Batches(wrs, qstart, 1)
	if len(bs) != 2 {
		t.Fatalf("%d batches", len(bs))
	}
	n := 0
	for i, b := range bs {
		if starts[i][len(starts[i])-1] != len(b) {
			t.Fatalf("batch %d qstart %v", i, starts[i])
		}
		for q := 0; q < 2; q++ {
			if starts[i][q+1]-starts[i][q] > 1 {
				t.Fatalf("batch %d gives QP %d more than the limit", i, q)
			}
			for _, w := range b[starts[i][q]:starts[i][q+1]] {
				if w.QP != q {
					t.Fatalf("batch %d: %+v under QP %d", i, w, q)
				}
			}
		}
		n += len(b)
	}
	if n != len(wrs) {
		t.Fatalf("batches hold %d of %d", n, len(wrs))
	}
}

func TestErrorMapping(t *testing.T) {
	wrs := []WR{{QP: 1, Len: 16384, Remote: 0x1000, RKey: 0xbad}}
	err := toError("read", status{code: codeWC, wcStatus: 10, wrIndex: 0, msg: "remote access error"}, wrs)
	var ce *CompletionError
	if !errors.As(err, &ce) || ce.Index != 0 || ce.WR.QP != 1 ||
		!strings.Contains(err.Error(), "work request 0") || !strings.Contains(err.Error(), "remote access error") {
		t.Fatalf("completion error: %v", err)
	}
	for _, tc := range []struct {
		code int
		want error
	}{{codeNoHdr, ErrNotBuilt}, {codeNoLib, ErrNoLibrary}, {codeNoDev, ErrNoDevice}, {codeUnsup, ErrUnsupported}, {codeTimeout, ErrTimeout}, {codeArg, ErrBadArg}} {
		err := toError("op", status{code: tc.code, wrIndex: -1, msg: "m"}, nil)
		if !errors.Is(err, tc.want) {
			t.Errorf("code %d: %v is not %v", tc.code, err, tc.want)
		}
	}
	err = toError("reg mr", status{code: codeSys, errno: int(syscall.ENOMEM), wrIndex: -1, msg: "ibv_reg_mr: Cannot allocate memory"}, nil)
	if !errors.Is(err, syscall.ENOMEM) || !strings.HasPrefix(err.Error(), "rdma: reg mr: ") {
		t.Fatalf("sys error: %v", err)
	}
	if toError("x", status{code: codeOK}, nil) != nil {
		t.Fatal("ok mapped to an error")
	}
}

// TestOpenWithoutDevice runs where this machine has no RDMA device: the
// endpoint says so rather than crashing.
func TestOpenWithoutDevice(t *testing.T) {
	names, err := DeviceNames("")
	if err == nil && len(names) > 0 {
		t.Skipf("this machine has RDMA devices %v", names)
	}
	_, err = Open(Config{GIDIndex: -1, Root: "/"})
	if !errors.Is(err, ErrNoDevice) && !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("Open: %v", err)
	}
	if errors.Is(err, ErrNoDevice) && !strings.Contains(err.Error(), "no RDMA device") {
		t.Fatalf("message %q", err)
	}
}

func TestLoadOverrideMissing(t *testing.T) {
	// A fresh process, so the library is not loaded yet: the override and
	// the sonames are all named when none loads.
	if os.Getenv("KVTIER_RDMA_CHILD") == "1" {
		err := Load("/nonexistent/libibverbs.so.1")
		if err == nil {
			// The real library loaded after the override failed: fine.
			return
		}
		if !strings.Contains(err.Error(), "/nonexistent/libibverbs.so.1") {
			t.Fatalf("error %q does not name the override", err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadOverrideMissing$")
	cmd.Env = append(os.Environ(), "KVTIER_RDMA_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestShimWithoutHeader compiles the shim as it builds where verbs.h is
// absent and checks every entry point says so.
func TestShimWithoutHeader(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.c")
	os.WriteFile(src, []byte(`#include "ibvwrap.c"
#include <stdio.h>
#include <string.h>
int main(void) {
	kvt_ibv_status st;
	kvt_ibv_ep *ep = 0;
	kvt_ibv_ep_attr a;
	if (kvt_ibv_load(NULL, &st) != KVT_IBV_ENOHDR) return 1;
	if (strcmp(st.msg, "built without verbs.h") != 0) return 2;
	if (kvt_ibv_ep_open(NULL, 0, 1, 1, &ep, &a, &st) != KVT_IBV_ENOHDR) return 3;
	kvt_ibv_rd *rd = 0;
	if (kvt_ibv_rd_start(NULL, NULL, 0, NULL, 1, &rd, &st) != KVT_IBV_ENOHDR) return 4;
	if (kvt_ibv_rd_poll(rd, 100, 0, &st) != KVT_IBV_ENOHDR) return 6;
	if (kvt_ibv_has_dmabuf()) return 5;
	puts(st.msg);
	return 0;
}
`), 0o644)
	bin := filepath.Join(dir, "nohdr")
	csrc, _ := filepath.Abs("../csrc")
	if out, err := exec.Command(cc, "-Wall", "-Werror", "-DKVT_IBV_FORCE_NOHDR", "-I", csrc, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("compile: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "built without verbs.h") {
		t.Fatalf("run: %v\n%s", err, out)
	}
}

// TestReadNoCompletionTimeout checks the last resort against the fake
// libibverbs with completions stalled from the start: a read gives up
// after the endpoint's timeout, having polled in slices, with the
// timeout error; the QPs go to ERR and the flushed reads are drained.
func TestReadNoCompletionTimeout(t *testing.T) {
	if os.Getenv("KVTIER_RDMA_CHILD") != "timeout" {
		dir := t.TempDir()
		lib, err := rdmatest.Build(dir)
		if err != nil {
			t.Skipf("cannot build the fake libibverbs: %v", err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestReadNoCompletionTimeout$", "-test.v")
		cmd.Env = append(os.Environ(), "KVTIER_RDMA_CHILD=timeout", "KVTIER_LIBIBVERBS="+lib,
			"FAKE_IBV_STALL_AFTER=0", "FAKE_IBV_LOG="+filepath.Join(dir, "fake.log"))
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestReadNoCompletionTimeout") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	cfg := Config{GIDIndex: -1, Root: "/", QPs: 1}
	a, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Connect(b.Info()); err != nil {
		t.Fatal(err)
	}
	if err := b.Connect(a.Info()); err != nil {
		t.Fatal(err)
	}
	src, dst := make([]byte, 1<<16), make([]byte, 1<<16)
	smr, err := b.Reg(uintptr(unsafe.Pointer(&src[0])), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	dmr, err := a.Reg(uintptr(unsafe.Pointer(&dst[0])), int64(len(dst)))
	if err != nil {
		t.Fatal(err)
	}
	a.SetTimeout(300 * time.Millisecond)
	var reads []WR
	for i := 0; i < 4; i++ {
		off := uint64(i) << 14
		reads = append(reads, WR{Local: dmr.Addr + off, LKey: dmr.LKey, Remote: smr.Addr + off, RKey: smr.RKey, Len: 1 << 14})
	}
	start := time.Now()
	err = a.Read(context.Background(), reads)
	if took := time.Since(start); took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("read gave up after %v, timeout 300ms", took)
	}
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "no completion for 300 ms") {
		t.Fatalf("stalled read: %v", err)
	}
	log, _ := os.ReadFile(os.Getenv("FAKE_IBV_LOG"))
	if got := strings.Count(string(log), "state=ERR"); got != 1 {
		t.Errorf("%d QPs moved to ERR, want 1:\n%s", got, log)
	}
	if got := strings.Count(string(log), "flush "); got != len(reads) {
		t.Errorf("%d flushed completions drained, want %d:\n%s", got, len(reads), log)
	}
	runtime.KeepAlive(src)
	runtime.KeepAlive(dst)
}
