package peer

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/rdma/rdmatest"
)

// TestVerbsFake runs the verbs transport end to end against the fake
// libibverbs (rdma/rdmatest) in a child process, where it is the first
// libibverbs loaded: handshake with QPNs, PSNs, GIDs and the rkey, QP
// state changes, registration, READs spread over QPs within the
// reads-in-flight limit, and the responder's refusals.
func TestVerbsFake(t *testing.T) {
	if os.Getenv("KVTIER_FAKE_CHILD") == "" {
		lib, err := rdmatest.Build(t.TempDir())
		if err != nil {
			t.Skipf("cannot build the fake libibverbs: %v", err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestVerbsFake$", "-test.v")
		cmd.Env = append(os.Environ(), "KVTIER_FAKE_CHILD=1", "KVTIER_LIBIBVERBS="+lib)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestVerbsFake") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}

	const seed = 11
	ep, err := rdma.Open(rdma.Config{GIDIndex: -1, QPs: 2, Root: "/"})
	if err != nil {
		t.Fatal(err)
	}
	info := ep.Info()
	if info.Device != "fake0" || info.GIDIndex != 1 || info.GID != "127.0.0.1" || info.MTU != 1024 || info.RdAtom != 16 || len(info.QPNs) != 2 {
		t.Fatalf("endpoint %+v", info)
	}
	ep.Close()
	for _, tc := range []struct {
		idx  int
		want string
	}{{99, "GID index 99 does not exist"}, {2, "GID index 2 on fake0 port 1 is empty"}} {
		if _, err := rdma.Open(rdma.Config{GIDIndex: tc.idx, Root: "/"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("GID index %d: %v", tc.idx, err)
		}
	}

	pool, err := NewHostPool(8<<20, seed)
	if err != nil {
		t.Fatal(err)
	}
	e, err := StartEmbedded(ServerConfig{Pool: pool, Transport: Verbs, RDMA: rdma.Config{GIDIndex: -1, Root: "/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := Dial(context.Background(), e.Addr, DialOptions{Transport: Verbs, Conns: 3, RDMA: rdma.Config{GIDIndex: -1, Root: "/"}})
	if err != nil {
		t.Fatal(err)
	}
	if in := c.Info(); in.Transport != Verbs || in.Device != "fake0" || in.Seed != seed || in.PoolBytes != 8<<20 {
		t.Fatalf("info %+v", in)
	}
	// 300 scattered 16 KiB chunks (more than 16 in flight per QP would be
	// refused by the fake) and one 3 MiB chunk split into 1 MiB requests.
	var list []Chunk
	var d int64
	for i := 0; i < 300; i++ {
		list = append(list, Chunk{Src: int64((i*131)%320) * 16384, Dst: d, Len: 16384})
		d += 16384
	}
	list = append(list, Chunk{Src: 5 << 20, Dst: d, Len: 3 << 20})
	d += 3 << 20
	dst := make([]byte, d)
	if err := c.Prepare(dst); err != nil {
		t.Fatal(err)
	}
	for rep := 0; rep < 2; rep++ {
		clear(dst)
		if err := c.ReadChunks(context.Background(), dst, list); err != nil {
			t.Fatal(err)
		}
		for _, ch := range list {
			if err := pattern.Check(dst[ch.Dst:ch.Dst+ch.Len], seed, ch.Src); err != nil {
				t.Fatalf("chunk %+v: %v", ch, err)
			}
		}
	}
	// A read past the pool is refused by the responder, naming the
	// failing work request; the endpoint is unusable afterwards.
	t.Setenv(EnvOutOfPool, "1")
	err = c.ReadChunks(context.Background(), dst, list[:4])
	if err == nil || !strings.Contains(err.Error(), "remote access error") || !strings.Contains(err.Error(), "work request") {
		t.Fatalf("out-of-pool read: %v", err)
	}
	t.Setenv(EnvOutOfPool, "")
	if err := c.ReadChunks(context.Background(), dst, list[:4]); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Fatalf("read after a failure: %v", err)
	}
	c.Close()

	// A wrong rkey is refused the same way; a new client is served.
	t.Setenv(EnvCorruptRKey, "1")
	bad, err := Dial(context.Background(), e.Addr, DialOptions{Transport: Verbs, RDMA: rdma.Config{GIDIndex: -1, Root: "/"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.ReadChunks(context.Background(), dst, list[:1]); err == nil || !strings.Contains(err.Error(), "remote access error") {
		t.Fatalf("corrupt rkey: %v", err)
	}
	bad.Close()
	t.Setenv(EnvCorruptRKey, "")
	good, err := Dial(context.Background(), e.Addr, DialOptions{Transport: Verbs, RDMA: rdma.Config{GIDIndex: -1, Root: "/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if err := good.ReadChunks(context.Background(), dst[:16384], list[:1]); err != nil {
		t.Fatal(err)
	}
	if err := pattern.Check(dst[:16384], seed, list[0].Src); err != nil {
		t.Fatal(err)
	}
	// TCP clients of a verbs server are served too.
	tc, err := Dial(context.Background(), e.Addr, DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if err := tc.ReadChunks(context.Background(), dst[:16384], list[:1]); err != nil {
		t.Fatal(err)
	}
}
