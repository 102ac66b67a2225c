package rdma

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/kvtier/kvtier/csrc/ibvwrap"
	"github.com/kvtier/kvtier/rdma/rdmatest"
)

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
	fixture := rdmatest.SysfsTree(t)
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
		{"no v2", []GIDEntry{{Index: 0, GID: "fe80::1", Type: "RoCE v2"}, {Index: 1, GID: "::ffff:10.0.0.1", Type: "IB/RoCE v1"}}, -1, "Ethernet", 0, "no RoCE v2 GID"},
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

func TestPortRate(t *testing.T) {
	fixture := rdmatest.SysfsTree(t)
	if r, err := PortRate(fixture, "mlx5_0", 1); err != nil || r != 200 {
		t.Errorf("PortRate(mlx5_0) = %v, %v", r, err)
	}
	if _, err := PortRate(fixture, "mlx5_9", 1); err == nil {
		t.Error("rate of a missing device")
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
	for q := range 2 {
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
		for q := range 2 {
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
	err := toError("read", status{Code: ibvwrap.CodeWC, WCStatus: 10, Index: 0, Msg: "remote access error"}, wrs)
	var ce *CompletionError
	if !errors.As(err, &ce) || ce.Index != 0 || ce.WR.QP != 1 ||
		!strings.Contains(err.Error(), "work request 0") || !strings.Contains(err.Error(), "remote access error") {
		t.Fatalf("completion error: %v", err)
	}
	for _, tc := range []struct {
		code int
		want error
	}{{ibvwrap.CodeNoLib, ErrNoLibrary}, {ibvwrap.CodeNoDev, ErrNoDevice}, {ibvwrap.CodeUnsup, ErrUnsupported}, {ibvwrap.CodeTimeout, ErrTimeout}, {ibvwrap.CodeArg, ErrBadArg}} {
		err := toError("op", status{Code: tc.code, Index: -1, Msg: "m"}, nil)
		if !errors.Is(err, tc.want) {
			t.Errorf("code %d: %v is not %v", tc.code, err, tc.want)
		}
	}
	err = toError("reg mr", status{Code: ibvwrap.CodeSys, Errno: int(syscall.ENOMEM), Index: -1, Msg: "ibv_reg_mr: Cannot allocate memory"}, nil)
	if !errors.Is(err, syscall.ENOMEM) || !strings.HasPrefix(err.Error(), "rdma: reg mr: ") {
		t.Fatalf("sys error: %v", err)
	}
	if toError("x", status{Code: ibvwrap.CodeOK}, nil) != nil {
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

// TestLoadOncePerPath: a path that does not load is named in the error,
// and asking again gives the same answer without loading again; the
// default sonames are another path.
func TestLoadOncePerPath(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "libibverbs.so.1")
	err := Load(bad)
	if !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("Load(%s) = %v", bad, err)
	}
	if again := Load(bad); again != err {
		t.Fatalf("second Load = %v, want the first error", again)
	}
	if _, err := DeviceNames(bad); !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("DeviceNames(%s) = %v", bad, err)
	}
}

// TestShimNeedsNoVerbsHeader compiles the shim with an include directory
// whose infiniband/verbs.h fails the build: the shim must not need it.
func TestShimNeedsNoVerbsHeader(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "infiniband", "verbs.h"), []byte("#error \"the verbs shim must build without verbs.h\"\n"), 0o644)
	src, _ := filepath.Abs("../csrc/ibvwrap/ibvwrap.c")
	out, err := exec.Command(cc, "-Wall", "-Werror", "-I", dir, "-c", "-o", filepath.Join(dir, "ibvwrap.o"), src).CombinedOutput()
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, out)
	}
}

// TestReadNoCompletionTimeout checks the last resort against the fake
// libibverbs with completions stalled from the start: a read gives up
// after the endpoint's timeout, having polled in slices, with the
// timeout error; the QPs go to ERR and the flushed reads are drained.
func TestReadNoCompletionTimeout(t *testing.T) {
	dir := t.TempDir()
	lib := rdmatest.Build(t)
	t.Setenv("FAKE_IBV_STALL_AFTER", "0")
	t.Setenv("FAKE_IBV_LOG", filepath.Join(dir, "fake.log"))
	cfg := Config{GIDIndex: -1, Root: "/", QPs: 1, Library: lib}
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
	for i := range 4 {
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

// TestOnPeerSubnet: on a port with addresses on two subnets (a VLAN
// beside the untagged one), the GID offered first is the one on the
// peer's subnet, as NCCL matches subnets; an address on no interface's
// subnet with the peer, or no peer, picks none.
func TestOnPeerSubnet(t *testing.T) {
	t.Parallel()
	table := []GIDEntry{
		{Index: 0, GID: "fe80:0000:0000:0000:0000:0000:0000:0001", Type: "RoCE v2", NetDev: "ens1"},
		{Index: 3, GID: "0000:0000:0000:0000:0000:ffff:0a00:0001", Type: "RoCE v2", NetDev: "ens1"},
		{Index: 4, GID: "0000:0000:0000:0000:0000:ffff:0a00:0001", Type: "IB/RoCE v1", NetDev: "ens1"},
		{Index: 5, GID: "0000:0000:0000:0000:0000:ffff:c0a8:6401", Type: "RoCE v2", NetDev: "ens1.100"},
	}
	nets := func(dev string) []*net.IPNet {
		cidr := map[string]string{"ens1": "10.0.0.1/24", "ens1.100": "192.168.100.1/24"}[dev]
		ip, n, _ := net.ParseCIDR(cidr)
		n.IP = ip
		return []*net.IPNet{n}
	}
	for _, tc := range []struct {
		peer string
		want int // -1: none
	}{{"192.168.100.7", 5}, {"10.0.0.9", 3}, {"172.16.0.1", -1}, {"", -1}} {
		e, ok := OnPeerSubnet(table, net.ParseIP(tc.peer), nets)
		if got := map[bool]int{true: e.Index, false: -1}[ok]; got != tc.want {
			t.Errorf("peer %q: GID index %d, want %d", tc.peer, got, tc.want)
		}
	}
}
