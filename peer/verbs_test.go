package peer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/rdma/rdmatest"
)

// TestVerbsFake runs the verbs transport end to end against the fake
// libibverbs (rdma/rdmatest): handshake with QPNs, PSNs, GIDs and the rkey, QP
// state changes, registration, READs spread over QPs within the
// reads-in-flight limit, and the responder's refusals.
func TestVerbsFake(t *testing.T) {
	rc := fakeVerbs(t)
	const seed = 11
	two := rc
	two.QPs = 2
	ep, err := rdma.Open(two)
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
		bad := rc
		bad.GIDIndex = tc.idx
		if _, err := rdma.Open(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("GID index %d: %v", tc.idx, err)
		}
	}

	addr, _ := startServerConfig(t, 8<<20, seed, ServerConfig{Transport: Verbs, RDMA: rc})
	c, err := Dial(context.Background(), addr, DialOptions{Transport: Verbs, Conns: 3, RDMA: rc})
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
	for i := range 300 {
		list = append(list, Chunk{Src: int64((i*131)%320) * 16384, Dst: d, Len: 16384})
		d += 16384
	}
	list = append(list, Chunk{Src: 5 << 20, Dst: d, Len: 3 << 20})
	d += 3 << 20
	dst := make([]byte, d)
	if err := c.Prepare(dst); err != nil {
		t.Fatal(err)
	}
	for range 2 {
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
	c.Close()
	// A read past the pool is refused by the responder, naming the
	// failing work request; the endpoint is unusable afterwards.
	oop, err := Dial(context.Background(), addr, DialOptions{Transport: Verbs, RDMA: rc, Faults: Faults{OutOfPool: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := oop.Prepare(dst); err != nil {
		t.Fatal(err)
	}
	err = oop.ReadChunks(context.Background(), dst, list[:4])
	if err == nil || !strings.Contains(err.Error(), "remote access error") || !strings.Contains(err.Error(), "work request") {
		t.Fatalf("out-of-pool read: %v", err)
	}
	if err := oop.ReadChunks(context.Background(), dst, list[:4]); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Fatalf("read after a failure: %v", err)
	}
	oop.Close()

	// A wrong rkey is refused the same way; a new client is served.
	bad, err := Dial(context.Background(), addr, DialOptions{Transport: Verbs, RDMA: rc, Faults: Faults{CorruptRKey: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.ReadChunks(context.Background(), dst, list[:1]); err == nil || !strings.Contains(err.Error(), "remote access error") {
		t.Fatalf("corrupt rkey: %v", err)
	}
	bad.Close()
	good := mustDial(t, addr, DialOptions{Transport: Verbs, RDMA: rc})
	if err := good.ReadChunks(context.Background(), dst[:16384], list[:1]); err != nil {
		t.Fatal(err)
	}
	if err := pattern.Check(dst[:16384], seed, list[0].Src); err != nil {
		t.Fatal(err)
	}
	// TCP clients of a verbs server are served too.
	tc := mustDial(t, addr, DialOptions{})
	if err := tc.ReadChunks(context.Background(), dst[:16384], list[:1]); err != nil {
		t.Fatal(err)
	}
}

// fakeVerbs builds a fresh fake libibverbs, sets env ("K=V") for the
// test, and returns an endpoint configuration that loads the fake.
func fakeVerbs(t *testing.T, env ...string) rdma.Config {
	t.Helper()
	lib := rdmatest.Build(t)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return rdma.Config{GIDIndex: -1, Root: "/", Library: lib}
}

// fakeLog returns the lines the fake libibverbs logged so far.
func fakeLog(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(os.Getenv("FAKE_IBV_LOG"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// TestVerbsAbort stalls the fake's completions after the first 20, as a
// responder that died without a word does on soft-RoCE, and checks that
// a read gives up promptly when ctx is cancelled or the peer's control
// connection closes, not after the 30 s no-completion timeout: the QPs
// are moved to ERR and every read in flight is drained (flushed) before
// the destination's registration is released, and the endpoint refuses
// further reads.
func TestVerbsAbort(t *testing.T) {
	rc := fakeVerbs(t, "FAKE_IBV_STALL_AFTER=20", "FAKE_IBV_LOG="+filepath.Join(t.TempDir(), "fake.log"))
	const seed = 5
	addr, closeServer := startServerConfig(t, 4<<20, seed, ServerConfig{Transport: Verbs, RDMA: rc})
	dial := func() *Client {
		c, err := Dial(context.Background(), addr, DialOptions{Transport: Verbs, Conns: 2, RDMA: rc})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var list []Chunk
	for i := range int64(200) {
		list = append(list, Chunk{Src: (i * 7 % 256) * 16384, Dst: i * 16384, Len: 16384})
	}
	dst := make([]byte, 200*16384)

	// Cancelled: 20 reads complete, then each of the 2 QPs holds its 16
	// reads in flight until the abort flushes them.
	c := dial()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	err := c.ReadChunks(ctx, dst, list)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("cancelled read returned after %v", took)
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("cancelled read: %v", err)
	}
	if err := pattern.Check(dst[:16384], seed, list[0].Src); err != nil {
		t.Fatalf("a read completed before the stall: %v", err)
	}
	log := fakeLog(t)
	if n := countPrefix(log, "modify_qp_qpn="); n != 2 {
		t.Fatalf("%d QPs moved to ERR, want 2: %q", n, log)
	}
	if n := countPrefix(log, "flush_"); n != 2*16 {
		t.Fatalf("%d flushed completions drained, want 32: %q", n, log)
	}
	if err := c.ReadChunks(context.Background(), dst, list[:1]); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Fatalf("read after an abort: %v", err)
	}
	c.Close()
	log = fakeLog(t)
	lastFlush, firstDereg := -1, -1
	for i, l := range log {
		if strings.HasPrefix(l, "flush_") {
			lastFlush = i
		}
		if strings.HasPrefix(l, "dereg_mr") && firstDereg < 0 {
			firstDereg = i
		}
	}
	if firstDereg < 0 || lastFlush > firstDereg {
		t.Fatalf("destination deregistered before the drain: %q", log)
	}

	// The peer goes away: nothing completes any more; closing the server
	// closes the control connection, and the read stops with that.
	c = dial()
	defer c.Close()
	go func() {
		time.Sleep(200 * time.Millisecond)
		closeServer()
	}()
	start = time.Now()
	err = c.ReadChunks(context.Background(), dst, list)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("read from a closed peer returned after %v", took)
	}
	if err == nil || !strings.Contains(err.Error(), "peer "+addr+" closed the control connection mid-read") || errors.Is(err, rdma.ErrTimeout) {
		t.Fatalf("read from a closed peer: %v", err)
	}
	if n := countPrefix(fakeLog(t), "modify_qp_qpn="); n != 4 {
		t.Fatalf("%d QPs moved to ERR in all, want 4", n)
	}
}

// TestVerbsWrite pushes scattered chunks into a writable verbs peer's
// pool by RDMA WRITE over two QPs and reads them back; a chunk nobody
// wrote keeps the peer's pattern. A read-only verbs peer refuses a
// session that asks to write, naming --writable.
func TestVerbsWrite(t *testing.T) {
	rc := fakeVerbs(t)
	const size, chunk = 4 << 20, 16384
	addr, _ := startServerConfig(t, size, 5, ServerConfig{Transport: Verbs, RDMA: rc, Writable: true})
	c, err := Dial(context.Background(), addr, DialOptions{Transport: Verbs, Conns: 2, RDMA: rc, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Info().Writable {
		t.Fatal("writable verbs peer did not grant writes")
	}
	src := make([]byte, 100*chunk)
	pattern.Fill(src, 77, 0)
	var list []Chunk
	for i := range 100 {
		list = append(list, Chunk{Src: int64(255-2*i) * chunk, Dst: int64(i) * chunk, Len: chunk})
	}
	writeReadBack(t, c, src, 77, list)
	one := make([]byte, chunk)
	if err := c.ReadChunks(context.Background(), one, []Chunk{{Src: 254 * chunk, Len: chunk}}); err != nil {
		t.Fatal(err)
	}
	if err := pattern.Check(one, 5, 254*chunk); err != nil {
		t.Errorf("a chunk nobody wrote: %v", err)
	}

	ro, _ := startServerConfig(t, size, 5, ServerConfig{Transport: Verbs, RDMA: rc})
	if _, err := Dial(context.Background(), ro, DialOptions{Transport: Verbs, RDMA: rc, Write: true}); err == nil || !strings.Contains(err.Error(), "--writable") {
		t.Errorf("dialing a read-only verbs peer to write: %v", err)
	}
}
