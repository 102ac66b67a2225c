package peer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtier/kvtier/internal/syncbuf"
	"github.com/kvtier/kvtier/pattern"
)

// fakeDevice is host memory standing in for device memory on the fake
// libibverbs, exportable as a "DMA-BUF" (the read end of a pipe: the
// fake checks it is open at registration). closed reports whether every
// exported fd was closed.
type fakeDevice struct {
	mem    []byte
	writes []*os.File
}

func newFakeDevice(t *testing.T, n int) *fakeDevice {
	d := &fakeDevice{mem: make([]byte, n)}
	t.Cleanup(func() {
		for _, w := range d.writes {
			w.Close()
		}
		runtime.KeepAlive(d.mem)
	})
	return d
}

func (d *fakeDevice) export() (int, int64, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return -1, 0, err
	}
	fd, err := syscall.Dup(int(r.Fd()))
	r.Close()
	if err != nil {
		w.Close()
		return -1, 0, err
	}
	d.writes = append(d.writes, w)
	return fd, 0, nil
}

// closed reports whether every exported fd was closed: a pipe without a
// reader refuses writes with EPIPE.
func (d *fakeDevice) closed() bool {
	for _, w := range d.writes {
		if _, err := w.Write([]byte{1}); !errors.Is(err, syscall.EPIPE) {
			return false
		}
	}
	return len(d.writes) > 0
}

func (d *fakeDevice) mem4(export bool) DeviceMem {
	m := DeviceMem{Addr: hostAddr(d.mem), Size: int64(len(d.mem))}
	if export {
		m.Export = d.export
	}
	return m
}

// bounceInto returns a bounce function whose upload copies into dev.
func bounceInto(dev []byte) func() ([]byte, func([]Chunk) error, error) {
	return func() ([]byte, func([]Chunk) error, error) {
		host := make([]byte, len(dev))
		return host, func(list []Chunk) error {
			for _, ch := range list {
				copy(dev[ch.Dst:ch.Dst+ch.Len], host[ch.Dst:ch.Dst+ch.Len])
			}
			return nil
		}, nil
	}
}

// TestGPUDirectFallback runs a GPUDirect destination on the fake
// libibverbs whose DMA-BUF registrations work, fail every read with a
// completion error, or never complete: the probe decides the path within
// its timeout, a failed probe falls back to the bounce buffer on a fresh
// endpoint (the old one's QPs are in ERR) whose reads then succeed, and
// the reason is kept. Every DMA-BUF fd is closed once registered, and
// GPU registrations ask for relaxed ordering.
func TestGPUDirectFallback(t *testing.T) {
	const seed = 3
	for _, tc := range []struct{ mode, path, why string }{
		{"ok", DestGPUDirect, ""},
		{"wc-error", DestBounce, "local protection error"},
		{"stall", DestBounce, "GPUDirect probe read: no completion within 300ms"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "fake.log")
			rc := fakeVerbs(t, "FAKE_IBV_DMABUF="+tc.mode, "FAKE_IBV_LOG="+log)
			addr, _ := startServerConfig(t, 4<<20, seed, ServerConfig{Transport: Verbs, RDMA: rc})
			c := mustDial(t, addr, DialOptions{Transport: Verbs, Conns: 2, RDMA: rc, ProbeTimeout: 300 * time.Millisecond})
			var list []Chunk
			for i := range int64(64) {
				list = append(list, Chunk{Src: (i * 37 % 256) * 16384, Dst: i * 16384, Len: 16384})
			}
			dev := newFakeDevice(t, 64*16384)
			d, err := c.DeviceDestination(context.Background(), dev.mem4(true), list[:1], bounceInto(dev.mem))
			if err != nil {
				t.Fatal(err)
			}
			if d.Path != tc.path || !strings.Contains(d.Why, tc.why) || (tc.why == "") != (d.Why == "") {
				t.Fatalf("path %q, why %q; want %q, %q", d.Path, d.Why, tc.path, tc.why)
			}
			if err := c.Read(context.Background(), d, list); err != nil {
				t.Fatalf("read after the probe: %v", err)
			}
			for _, ch := range list {
				if err := pattern.Check(dev.mem[ch.Dst:ch.Dst+ch.Len], seed, ch.Src); err != nil {
					t.Fatalf("chunk %+v: %v", ch, err)
				}
			}
			if !dev.closed() {
				t.Error("a DMA-BUF fd was left open after its registration")
			}
			b, _ := os.ReadFile(log)
			if !strings.Contains(string(b), "reg_dmabuf_mr access=0x100005") {
				t.Errorf("GPU registration without relaxed ordering:\n%s", b)
			}
		})
	}
}

// TestPeerMemRegistration registers device memory through a peer-memory
// module (nvidia_peermem, or the legacy nv_peer_mem) with ibv_reg_mr on
// the device pointer, asking for relaxed ordering through
// ibv_reg_mr_iova2; without either module and without DMA-BUF it is
// unsupported.
func TestPeerMemRegistration(t *testing.T) {
	for _, mod := range []string{"nvidia_peermem", "nv_peer_mem", ""} {
		t.Run("module="+mod, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "fake.log")
			rc := fakeVerbs(t, "FAKE_IBV_LOG="+log)
			rc.Root = t.TempDir()
			if mod != "" {
				if err := os.MkdirAll(filepath.Join(rc.Root, "sys/module", mod), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			addr, _ := startServerConfig(t, 4<<20, 1, ServerConfig{Transport: Verbs, RDMA: rc})
			c := mustDial(t, addr, DialOptions{Transport: Verbs, RDMA: rc})
			dev := newFakeDevice(t, 1<<16)
			err := c.ReadToDevice(context.Background(), dev.mem4(false), []Chunk{{Src: 0, Dst: 0, Len: 1 << 16}})
			if mod == "" {
				if err == nil || !strings.Contains(err.Error(), "nv_peer_mem") {
					t.Fatalf("without a peer-memory module: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := pattern.Check(dev.mem, 1, 0); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(log); !strings.Contains(string(b), "reg_mr_iova2 access=0x100005") {
				t.Errorf("GPU registration without relaxed ordering:\n%s", b)
			}
		})
	}
}

// TestGPUDirectStore runs a GPUDirect source on the fake libibverbs
// whose DMA-BUF registrations work, fail every write with a completion
// error, or never complete: the probe write decides the path, a failed
// probe falls back to the bounce buffer (downloaded before each write)
// on a fresh endpoint, the reason is kept, and either way the writes
// land in the peer's pool.
func TestGPUDirectStore(t *testing.T) {
	for _, tc := range []struct{ mode, path, why string }{
		{"ok", DestGPUDirect, ""},
		{"wc-error", DestBounce, "local protection error"},
		{"stall", DestBounce, "GPUDirect probe write: no completion within 300ms"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			rc := fakeVerbs(t, "FAKE_IBV_DMABUF="+tc.mode)
			pool, err := NewHostPool(4<<20, 1)
			if err != nil {
				t.Fatal(err)
			}
			var log syncbuf.Buffer
			e, err := StartEmbedded(ServerConfig{Pool: pool, Transport: Verbs, RDMA: rc, Writable: true, Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			c := mustDial(t, e.Addr, DialOptions{Transport: Verbs, Conns: 2, RDMA: rc, Write: true, ProbeTimeout: 300 * time.Millisecond})
			var list []Chunk
			for i := range int64(64) {
				list = append(list, Chunk{Src: (i * 37 % 256) * 16384, Dst: i * 16384, Len: 16384})
			}
			dev := newFakeDevice(t, 64*16384)
			pattern.Fill(dev.mem, 21, 0)
			downloads := 0
			bounce := func() ([]byte, func([]Chunk) error, error) {
				host := make([]byte, len(dev.mem))
				return host, func(l []Chunk) error {
					downloads++
					for _, ch := range l {
						copy(host[ch.Dst:ch.Dst+ch.Len], dev.mem[ch.Dst:ch.Dst+ch.Len])
					}
					return nil
				}, nil
			}
			s, err := c.DeviceSource(context.Background(), dev.mem4(true), list[:1], bounce)
			if err != nil {
				t.Fatal(err)
			}
			if s.Path != tc.path || !strings.Contains(s.Why, tc.why) || (tc.why == "") != (s.Why == "") {
				t.Fatalf("path %q, why %q; want %q, %q", s.Path, s.Why, tc.path, tc.why)
			}
			// The failed probe's session, whose announced region the peer
			// fills with its pattern again once it ends, has ended when
			// the client moves to a fresh one: the undoing cannot land on
			// what the bounce buffer writes there (it did once on a loaded
			// machine).
			if tc.path == DestBounce && !strings.Contains(log.String(), "hold the pool's pattern again") {
				t.Errorf("the failed probe's session was not yet undone when DeviceSource returned; serve's log:\n%s", log.String())
			}
			if err := c.Write(context.Background(), s, list); err != nil {
				t.Fatalf("write after the probe: %v", err)
			}
			if (downloads == 1) != (tc.path == DestBounce) {
				t.Errorf("%d downloads to the bounce buffer on path %s", downloads, s.Path)
			}
			h := pool.Host()
			for _, ch := range list {
				if err := pattern.Check(h[ch.Src:ch.Src+ch.Len], 21, ch.Dst); err != nil {
					t.Fatalf("chunk %+v in the peer's pool: %v", ch, err)
				}
			}
			if !dev.closed() {
				t.Error("a DMA-BUF fd was left open after its registration")
			}
		})
	}
}

// TestScrubKeepsSourceRegistered checks that writing something else
// between two stores (a scrub's junk) does not make the next store
// register its source again: the client keeps two sources registered.
func TestScrubKeepsSourceRegistered(t *testing.T) {
	log := filepath.Join(t.TempDir(), "fake.log")
	rc := fakeVerbs(t, "FAKE_IBV_LOG="+log)
	addr, _ := startServerConfig(t, 1<<20, 1, ServerConfig{Transport: Verbs, RDMA: rc, Writable: true})
	c := mustDial(t, addr, DialOptions{Transport: Verbs, RDMA: rc, Write: true})
	src, junk := make([]byte, 64<<10), make([]byte, 64<<10)
	list := []Chunk{{Src: 0, Dst: 0, Len: 64 << 10}}
	if err := c.PrepareWrite(src); err != nil {
		t.Fatal(err)
	}
	before := countPrefix(fakeLog(t), "reg_mr")
	for _, b := range [][]byte{junk, src, junk, src} {
		if err := c.WriteChunks(context.Background(), b, list); err != nil {
			t.Fatal(err)
		}
	}
	if n := countPrefix(fakeLog(t), "reg_mr") - before; n != 1 {
		t.Errorf("%d registrations for stores alternating with scrubs, want 1 (the scrub's junk, once)", n)
	}
}
