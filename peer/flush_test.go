package peer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvtier/kvtier/pattern"
)

// hostDev is devMem whose address is its bytes' host address, so that
// the fake libibverbs can register it as "device" memory.
type hostDev struct{ devMem }

func (m *hostDev) Addr() uintptr { return hostAddr(m.b) }

// TestFlushBeforeVerify serves a "GPU" pool (reached through ReadAt and
// WriteAt, registered through a peer-memory module) with a flush over
// the fake libibverbs: a writable verbs session learns that the peer
// flushes, and each Flush runs the pool's flush once, before the client
// reads back what it wrote; a failed flush is the client's error and the
// session goes on; a read-only session is never asked; and once RDMA
// WRITEs may have landed, the server flushes before it reads the pool
// through the device for a TCP client.
func TestFlushBeforeVerify(t *testing.T) {
	rc := fakeVerbs(t)
	rc.Root = t.TempDir()
	if err := os.MkdirAll(filepath.Join(rc.Root, "sys/module/nvidia_peermem"), 0o755); err != nil {
		t.Fatal(err)
	}
	const size, seed = 1 << 20, 9
	mem := &hostDev{devMem{b: make([]byte, size)}}
	pool, err := NewBufferPool(mem, GPUMem, nil, seed)
	if err != nil {
		t.Fatal(err)
	}
	var flushes atomic.Int64
	var fail atomic.Bool
	pool.SetGPUDirectFlush(func() error {
		if fail.Load() {
			return errors.New("CUDA_ERROR_UNKNOWN")
		}
		flushes.Add(1)
		return nil
	})
	e, err := StartEmbedded(ServerConfig{Pool: pool, Transport: Verbs, RDMA: rc, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	tc := mustDial(t, e.Addr, DialOptions{})
	one := make([]byte, 4096)
	if err := tc.ReadChunks(context.Background(), one, []Chunk{{Len: 4096}}); err != nil || flushes.Load() != 0 {
		t.Fatalf("TCP read before any RDMA write: %v, %d flushes (want none)", err, flushes.Load())
	}
	ro := mustDial(t, e.Addr, DialOptions{Transport: Verbs, RDMA: rc})
	if ro.Info().Flushes || ro.Flush(context.Background()) != nil || flushes.Load() != 0 {
		t.Fatalf("a read-only session: flushes %v, %d flushes", ro.Info().Flushes, flushes.Load())
	}

	c := mustDial(t, e.Addr, DialOptions{Transport: Verbs, RDMA: rc, Write: true})
	if !c.Info().Flushes {
		t.Fatal("a writable verbs session into a pool with a flush was not told the peer flushes")
	}
	src := make([]byte, 8<<10)
	pattern.Fill(src, 5, 0)
	list := []Chunk{{Src: 64 << 10, Dst: 0, Len: 4 << 10}, {Src: 8 << 10, Dst: 4 << 10, Len: 4 << 10}}
	if err := c.WriteChunks(context.Background(), src, list); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(context.Background()); err != nil || flushes.Load() != 1 {
		t.Fatalf("Flush: %v, %d flushes (want 1)", err, flushes.Load())
	}
	for _, ch := range list {
		if err := pattern.Check(mem.b[ch.Src:ch.Src+ch.Len], 5, ch.Dst); err != nil {
			t.Errorf("chunk at %d: %v", ch.Src, err)
		}
	}
	fail.Store(true)
	if err := c.Flush(context.Background()); err == nil || !strings.Contains(err.Error(), "could not flush its pool") ||
		!strings.Contains(err.Error(), "CUDA_ERROR_UNKNOWN") {
		t.Errorf("failed flush: %v", err)
	}
	fail.Store(false)
	if err := c.Flush(context.Background()); err != nil || flushes.Load() != 2 {
		t.Fatalf("Flush after a failed one: %v, %d flushes (want 2)", err, flushes.Load())
	}
	if err := tc.ReadChunks(context.Background(), one, []Chunk{{Src: 64 << 10, Len: 4096}}); err != nil || flushes.Load() != 3 {
		t.Fatalf("TCP read after RDMA writes: %v, %d flushes (want 3)", err, flushes.Load())
	}
	if err := pattern.Check(one, 5, 0); err != nil {
		t.Errorf("TCP read back: %v", err)
	}
}
