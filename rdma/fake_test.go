package rdma

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/kvtier/kvtier/rdma/rdmatest"
)

// fakePair opens two endpoints on the fake libibverbs with cfgA and cfgB
// (Library set here) and connects a to b and b to a, a first; env holds
// K=V settings for the fake.
func fakePair(t *testing.T, cfgA, cfgB Config, env ...string) (a, b *Endpoint, err error) {
	t.Helper()
	lib := rdmatest.Build(t)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfgA.Library, cfgB.Library = lib, lib
	if a, err = Open(cfgA); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = Open(cfgB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := a.Connect(b.Info()); err != nil {
		return a, b, err
	}
	return a, b, b.Connect(a.Info())
}

// readOnce has a read n 16 KiB chunks of b's memory and checks them.
func readOnce(t *testing.T, a, b *Endpoint, n int) error {
	t.Helper()
	src, dst := make([]byte, n<<14), make([]byte, n<<14)
	for i := range src {
		src[i] = byte(i * 7)
	}
	smr, err := b.Reg(uintptr(unsafe.Pointer(&src[0])), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	dmr, err := a.Reg(uintptr(unsafe.Pointer(&dst[0])), int64(len(dst)))
	if err != nil {
		t.Fatal(err)
	}
	var reads []WR
	for i := range n {
		off := uint64(i) << 14
		reads = append(reads, WR{Local: dmr.Addr + off, LKey: dmr.LKey, Remote: smr.Addr + off, RKey: smr.RKey, Len: 1 << 14})
	}
	err = a.Read(context.Background(), reads)
	if err == nil && string(src) != string(dst) {
		t.Fatal("read completed with wrong bytes")
	}
	runtime.KeepAlive(src)
	runtime.KeepAlive(dst)
	return err
}

// TestGIDAgreement connects endpoints of the fake, whose port 1 offers an
// IPv4-mapped and an IPv6 RoCE GID and port 2 an IPv6 one only: both ends
// settle on one family (IPv4-mapped where both have it), and GIDs of two
// families named by --gid-index are a connect error naming both, not a
// connection whose every read fails.
func TestGIDAgreement(t *testing.T) {
	auto := Config{GIDIndex: -1, Root: "/"}
	port2 := Config{GIDIndex: -1, Root: "/", Port: 2}
	v4 := Config{GIDIndex: 1, Root: "/", Port: 1}
	for _, tc := range []struct {
		name       string
		a, b       Config
		gidA, gidB string
		err        string
	}{
		{"both ports with both families take IPv4", auto, auto, "127.0.0.1", "127.0.0.1", ""},
		{"an IPv6-only end makes both IPv6", auto, port2, "fd00::1", "fd00::2", ""},
		{"IPv6-only first", port2, auto, "fd00::2", "fd00::1", ""},
		{"named GIDs of two families", v4, port2, "", "",
			"this side has 127.0.0.1 (index 1, IPv4), the peer fd00::2 (index 1, IPv6)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, err := fakePair(t, tc.a, tc.b)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("connect: %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Info().GID != tc.gidA || b.Info().GID != tc.gidB {
				t.Fatalf("GIDs %s and %s, want %s and %s", a.Info().GID, b.Info().GID, tc.gidA, tc.gidB)
			}
			if err := readOnce(t, a, b, 4); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRdAtomFromInitiatorLimit opens endpoints on a fake NIC that issues
// at most 4 reads per QP (max_qp_init_rd_atom) but answers 128
// (max_qp_rd_atom): max_rd_atomic must come from the initiator's limit,
// or the move to RTS fails, and no more than 4 reads are ever in flight.
func TestRdAtomFromInitiatorLimit(t *testing.T) {
	cfg := Config{GIDIndex: -1, Root: "/"}
	a, b, err := fakePair(t, cfg, cfg, "FAKE_IBV_INIT_RD_ATOM=4")
	if err != nil {
		t.Fatal(err)
	}
	if a.Info().RdAtom != 16 {
		t.Errorf("responder limit offered %d, want 16", a.Info().RdAtom)
	}
	if err := readOnce(t, a, b, 40); err != nil {
		t.Fatal(err)
	}
}

// TestConnectQoSAndErrors checks that the traffic class and service
// level reach the QPs' address vector, that values out of range are
// refused, and that a failed ibv_modify_qp is reported from its return
// value (the fake leaves an unrelated errno).
func TestConnectQoSAndErrors(t *testing.T) {
	log := filepath.Join(t.TempDir(), "fake.log")
	cfg := Config{GIDIndex: -1, Root: "/", TC: 106, SL: 3}
	if _, _, err := fakePair(t, cfg, cfg, "FAKE_IBV_LOG="+log); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	if n := strings.Count(string(b), "tc=106 sl=3"); n != 2 {
		t.Errorf("%d QPs with tc=106 sl=3, want 2:\n%s", n, b)
	}
	for _, bad := range []Config{{TC: 256}, {SL: 16}, {TC: -1}} {
		bad.Library = rdmatest.Build(t)
		if _, err := Open(bad); !errors.Is(err, ErrBadArg) {
			t.Errorf("%+v: %v, want a bad argument", bad, err)
		}
	}
	t.Setenv("FAKE_IBV_FAIL_RTS", "22")
	a, err := Open(Config{GIDIndex: -1, Root: "/", Library: rdmatest.Build(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	err = a.Connect(a.Info())
	if err == nil || !strings.Contains(err.Error(), "modify QP to RTS") || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("failed RTS: %v, want modify QP to RTS: invalid argument", err)
	}
}

// TestWrite has a write 40 16 KiB chunks (more than one QP's limit in
// flight) into b's memory: into memory b registered for remote write
// (Config.RemoteWrite) the bytes arrive; into memory registered without
// it the responder refuses with a remote access error, as a NIC does,
// and the endpoint refuses further requests.
func TestWrite(t *testing.T) {
	for _, writable := range []bool{true, false} {
		cfg := Config{GIDIndex: -1, Root: "/", QPs: 2}
		peerCfg := cfg
		peerCfg.RemoteWrite = writable
		a, b, err := fakePair(t, cfg, peerCfg)
		if err != nil {
			t.Fatal(err)
		}
		const n = 40
		src, dst := make([]byte, n<<14), make([]byte, n<<14)
		for i := range src {
			src[i] = byte(i*7 + 1)
		}
		smr, err := a.Reg(uintptr(unsafe.Pointer(&src[0])), int64(len(src)))
		if err != nil {
			t.Fatal(err)
		}
		dmr, err := b.Reg(uintptr(unsafe.Pointer(&dst[0])), int64(len(dst)))
		if err != nil {
			t.Fatal(err)
		}
		var writes []WR
		for i := range n {
			off := uint64(n-1-i) << 14 // scattered: the last slot first
			writes = append(writes, WR{Local: smr.Addr + off, LKey: smr.LKey, Remote: dmr.Addr + off, RKey: dmr.RKey, Len: 1 << 14})
		}
		err = a.Write(context.Background(), writes)
		runtime.KeepAlive(src)
		runtime.KeepAlive(dst)
		if writable {
			if err != nil {
				t.Fatalf("write into a writable region: %v", err)
			}
			if string(src) != string(dst) {
				t.Fatal("write completed with wrong bytes at the responder")
			}
			continue
		}
		var ce *CompletionError
		if !errors.As(err, &ce) || !strings.Contains(ce.Text, "remote access error") {
			t.Fatalf("write into a read-only region: %v, want a remote access error", err)
		}
		if a.Usable() {
			t.Error("endpoint still usable after a failed write")
		}
	}
}

// TestSLAboveSevenOnRoCE: the fake's port is Ethernet, where a service
// level is a 3-bit priority: --ib-sl 9 is a warning, 3 is not.
func TestSLAboveSevenOnRoCE(t *testing.T) {
	lib := rdmatest.Build(t)
	for sl, want := range map[int]string{9: "--ib-sl 9 on RoCE", 3: ""} {
		e, err := Open(Config{GIDIndex: -1, Root: "/", SL: sl, Library: lib})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(e.Warnings(), "\n")
		if want == "" && got != "" || !strings.Contains(got, want) || want != "" && !strings.Contains(got, "priority 1") {
			t.Errorf("SL %d: warnings %q", sl, got)
		}
		e.Close()
	}
}
