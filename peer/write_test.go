package peer

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/internal/syncbuf"
	"github.com/kvtier/kvtier/pattern"
)

// TestWriteChunks pushes scattered chunks into a writable peer's pool
// over several connections and reads them back; the pool around them
// keeps its pattern.
func TestWriteChunks(t *testing.T) {
	t.Parallel()
	const size, chunk = 1 << 20, 4096
	addr, _ := startServerConfig(t, size, 3, ServerConfig{Writable: true})
	c := mustDial(t, addr, DialOptions{Conns: 3, Write: true})
	if !c.Info().Writable {
		t.Fatal("writable peer did not grant writes")
	}
	src := make([]byte, 72*chunk)
	pattern.Fill(src, 77, 0)
	var list []Chunk
	for i := range 64 {
		list = append(list, Chunk{Src: int64(255-3*i) * chunk, Dst: int64(i) * chunk, Len: chunk})
	}
	// One large chunk too, split over the connections.
	list = append(list, Chunk{Src: 0, Dst: 64 * chunk, Len: 8 * chunk})
	writeReadBack(t, c, src, 77, list)
	one := make([]byte, chunk)
	if err := c.ReadChunks(context.Background(), one, []Chunk{{Src: 100 * chunk, Len: chunk}}); err != nil {
		t.Fatal(err)
	}
	if err := pattern.Check(one, 3, 100*chunk); err != nil {
		t.Errorf("a chunk nobody wrote: %v", err)
	}
}

// writeReadBack writes list from src (filled with the pattern of seed)
// into c's peer, reads the chunks back and checks them.
func writeReadBack(t *testing.T, c *Client, src []byte, seed uint64, list []Chunk) {
	t.Helper()
	if err := c.WriteChunks(context.Background(), src, list); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, len(src))
	if err := c.ReadChunks(context.Background(), back, list); err != nil {
		t.Fatal(err)
	}
	for i, ch := range list {
		if err := pattern.Check(back[ch.Dst:ch.Dst+ch.Len], seed, ch.Dst); err != nil {
			t.Fatalf("chunk %d read back: %v", i, err)
		}
	}
}

// TestWriteRefused checks the ways a write is refused: a read-only peer
// refuses a hello that asks to write, a session that did not ask may not
// write, and a write outside the pool ends its session with the reason.
func TestWriteRefused(t *testing.T) {
	t.Parallel()
	const size = 64 << 10
	ro, _ := startServer(t, size, 1)
	if _, err := Dial(context.Background(), ro, DialOptions{Write: true}); err == nil || !strings.Contains(err.Error(), "--writable") {
		t.Errorf("dialing a read-only peer to write: %v", err)
	}
	rc := mustDial(t, ro, DialOptions{})
	src := make([]byte, 4096)
	if err := rc.WriteChunks(context.Background(), src, []Chunk{{Len: 4096}}); err == nil || !strings.Contains(err.Error(), "may not write") {
		t.Errorf("write on a read session: %v", err)
	}
	rw, _ := startServerConfig(t, size, 1, ServerConfig{Writable: true})
	c := mustDial(t, rw, DialOptions{Write: true, Faults: Faults{SkipBounds: true}})
	err := c.WriteChunks(context.Background(), src, []Chunk{{Src: size - 1024, Len: 4096}})
	if err == nil || !strings.Contains(err.Error(), "refused a write") || !strings.Contains(err.Error(), "write of 4096 bytes at offset 64512 is outside the pool") {
		t.Errorf("write outside the pool: %v", err)
	}
	// A new session writes.
	c2 := mustDial(t, rw, DialOptions{Write: true})
	if err := c2.WriteChunks(context.Background(), src, []Chunk{{Src: 0, Len: 4096}}); err != nil {
		t.Errorf("write after a refused session: %v", err)
	}
}

// devMem is device memory for tests: bytes reached only through ReadAt
// and WriteAt, as a GPU pool's are.
type devMem struct{ b []byte }

func (m *devMem) Size() int64   { return int64(len(m.b)) }
func (m *devMem) Addr() uintptr { return 0 }
func (m *devMem) Host() []byte  { return nil }
func (m *devMem) Close() error  { return nil }
func (m *devMem) ReadAt(p []byte, off int64) (int, error) {
	return copy(p, m.b[off:]), nil
}
func (m *devMem) WriteAt(p []byte, off int64) (int, error) {
	return copy(m.b[off:], p), nil
}

// TestWriteIntoDevicePool pushes chunks into a pool in device memory,
// which the server stages through host memory.
func TestWriteIntoDevicePool(t *testing.T) {
	t.Parallel()
	mem := &devMem{b: make([]byte, 1<<20)}
	pool, err := NewBufferPool(mem, GPUMem, nil, 8)
	if err != nil {
		t.Fatal(err)
	}
	e, err := StartEmbedded(ServerConfig{Pool: pool, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := mustDial(t, e.Addr, DialOptions{Write: true})
	src := make([]byte, 6<<10)
	pattern.Fill(src, 5, 0)
	list := []Chunk{{Src: 100 << 10, Dst: 0, Len: 4 << 10}, {Src: 8 << 10, Dst: 4 << 10, Len: 2 << 10}}
	if err := c.WriteChunks(context.Background(), src, list); err != nil {
		t.Fatal(err)
	}
	for _, ch := range list {
		if err := pattern.Check(mem.b[ch.Src:ch.Src+ch.Len], 5, ch.Dst); err != nil {
			t.Errorf("chunk at %d: %v", ch.Src, err)
		}
	}
	if err := pattern.Check(mem.b[:8<<10], 8, 0); err != nil {
		t.Errorf("bytes nobody wrote: %v", err)
	}
}

// A writer that goes in the middle of a write leaves every chunk of it
// holding the pool's pattern again, in host and in device memory: a load
// after it verifies clean (the bytes it sent used to stay, failing every
// later load's data check until serve restarted).
func TestWriteCutShort(t *testing.T) {
	t.Parallel()
	const size, seed = 1 << 20, 9
	host, err := NewHostPool(size, seed)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := NewBufferPool(&devMem{b: make([]byte, size)}, GPUMem, nil, seed)
	if err != nil {
		t.Fatal(err)
	}
	pattern.Fill(dev.Buffer().(*devMem).b, seed, 0)
	for _, pool := range []*Pool{host, dev} {
		var log syncbuf.Buffer
		e, err := StartEmbedded(ServerConfig{Pool: pool, Writable: true, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		list := []Chunk{{Src: 64 << 10, Len: 8 << 10}, {Src: 512 << 10, Len: 300 << 10}}
		cutWrite(t, e.Addr, list, 200<<10)
		waitRestored(t, &log)
		c := mustDial(t, e.Addr, DialOptions{})
		for _, ch := range list {
			back := make([]byte, ch.Len)
			if err := c.ReadChunks(context.Background(), back, []Chunk{{Src: ch.Src, Len: ch.Len}}); err != nil {
				t.Fatal(err)
			}
			if err := pattern.Check(back, seed, ch.Src); err != nil {
				t.Errorf("%s pool, chunk at %d after a write cut short: %v", pool.Mem(), ch.Src, err)
			}
		}
	}
}

// cutWrite asks addr to write list and sends only n bytes of garbage
// before it goes.
func cutWrite(t *testing.T, addr string, list []Chunk, n int) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var w Welcome
	if err := WriteFrame(conn, Hello{Transport: TCP, Write: true}); err != nil {
		t.Fatal(err)
	}
	if err := ReadFrame(conn, &w); err != nil || !w.Writable {
		t.Fatalf("hello: %v, %+v", err, w)
	}
	req := binary.BigEndian.AppendUint32(nil, uint32(len(list))|writeFlag)
	for _, ch := range list {
		req = binary.BigEndian.AppendUint64(req, uint64(ch.Src))
		req = binary.BigEndian.AppendUint64(req, uint64(ch.Len))
	}
	if _, err := conn.Write(append(req, bytes.Repeat([]byte{0xAB}, n)...)); err != nil {
		t.Fatal(err)
	}
}

// waitRestored waits until a server's log says that a session's
// uncommitted writes hold the pool's pattern again.
func waitRestored(t *testing.T, log *syncbuf.Buffer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(log.String(), "pattern again") {
		if time.Now().After(deadline) || strings.Contains(log.String(), "failed") {
			t.Fatalf("no session's writes were undone: %q", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUncommittedWritesUndone: a writer that goes after its writes
// completed (over verbs, RDMA WRITEs the peer never sees) but before it
// committed them leaves their regions holding the pool's pattern again,
// so the next load verifies; what it committed before stays. Without
// the undoing, the bytes stayed and every later load failed its data
// check until serve restarted.
func TestUncommittedWritesUndone(t *testing.T) {
	for _, transport := range []string{TCP, Verbs} {
		t.Run(transport, func(t *testing.T) {
			const size, seed, chunk = 1 << 20, 9, 16 << 10
			cfg := ServerConfig{Transport: transport, Writable: true}
			opt := DialOptions{Transport: transport, Conns: 2, Write: true}
			if transport == Verbs {
				cfg.RDMA = fakeVerbs(t)
				opt.RDMA = cfg.RDMA
			}
			var log syncbuf.Buffer
			cfg.Log = &log
			addr, _ := startServerConfig(t, size, seed, cfg)
			w := mustDial(t, addr, opt)
			if !w.Info().Commits {
				t.Fatal("a writable session was not told the peer undoes uncommitted writes")
			}
			src := make([]byte, 8*chunk)
			pattern.Fill(src, 77, 0)
			kept := []Chunk{{Src: 0, Dst: 0, Len: chunk}, {Src: 40 * chunk, Dst: chunk, Len: chunk}}
			lost := []Chunk{{Src: 10 * chunk, Dst: 2 * chunk, Len: 4 * chunk}, {Src: 50 * chunk, Dst: 6 * chunk, Len: 2 * chunk}}
			writeReadBack(t, w, src, 77, kept)
			if err := w.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			writeReadBack(t, w, src, 77, lost)
			w.Close() // as a killed writer's connection ends
			waitRestored(t, &log)
			r := mustDial(t, addr, DialOptions{Transport: transport, RDMA: opt.RDMA})
			back := make([]byte, len(src))
			if err := r.ReadChunks(context.Background(), back, append(kept, lost...)); err != nil {
				t.Fatal(err)
			}
			for _, ch := range kept {
				if err := pattern.Check(back[ch.Dst:ch.Dst+ch.Len], 77, ch.Dst); err != nil {
					t.Errorf("committed chunk at %d: %v", ch.Src, err)
				}
			}
			for _, ch := range lost {
				if err := pattern.Check(back[ch.Dst:ch.Dst+ch.Len], seed, ch.Src); err != nil {
					t.Errorf("chunk at %d written without a commit: %v", ch.Src, err)
				}
			}
		})
	}
}
