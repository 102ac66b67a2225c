package peer

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/internal/syncbuf"
)

// slowHello connects to addr and sends the start of a hello announcing
// a message of n bytes, then one byte of it: a client that drips.
func slowHello(t *testing.T, addr string, n uint32) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hdr := append([]byte(Magic), 0, byte(Version))
	hdr = binary.BigEndian.AppendUint32(hdr, n)
	c.Write(append(hdr, '{'))
	return c
}

// A flood of slow handshakes costs the server only what the clients sent
// and the sessions it allows: a hello announcing more than a hello needs
// is refused at once, a client past the limit is refused at once saying
// so, and the server serves again once the handshakes time out.
func TestSlowHandshakeFlood(t *testing.T) {
	var log syncbuf.Buffer
	// The handshake timeout leaves room for opening 600 connections on a
	// loaded 2-core machine under the race detector (1 s did not).
	addr, _ := startServerConfig(t, 1<<20, 3, ServerConfig{HandshakeTimeout: 4 * time.Second, MaxSessions: 400, Log: &log})
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 200 {
		conns = append(conns, slowHello(t, addr, maxMessage))
	}
	time.Sleep(100 * time.Millisecond)
	for range 400 {
		conns = append(conns, slowHello(t, addr, maxHello))
	}
	time.Sleep(100 * time.Millisecond) // the server has accepted them all
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 32<<20 {
		t.Errorf("600 slow handshakes grew the heap by %d MiB", grew>>20)
	}
	_, err := Dial(context.Background(), addr, DialOptions{Timeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "server busy: it serves 400 connections at once") {
		t.Fatalf("client past the limit: %v", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := Dial(context.Background(), addr, DialOptions{Timeout: 5 * time.Second})
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused after the handshakes timed out: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(log.String(), "refused") {
		t.Errorf("the refusals were not logged: %q", log.String())
	}
}

// A hello larger than the server takes is refused before it is read.
func TestHelloTooLarge(t *testing.T) {
	t.Parallel()
	addr, _ := startServer(t, 1<<20, 3)
	c := slowHello(t, addr, maxHello+1)
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var w Welcome
	if err := ReadFrame(c, &w); err != nil || !strings.Contains(w.Error, "exceeds") {
		t.Fatalf("welcome %+v, %v", w, err)
	}
}

// A client that sends half a request, or stops reading its answer, is
// dropped after the server's idle timeout; other clients go on.
func TestServerIdleTimeout(t *testing.T) {
	t.Parallel()
	var log syncbuf.Buffer
	addr, _ := startServerConfig(t, 64<<20, 3, ServerConfig{IdleTimeout: 300 * time.Millisecond, Log: &log})
	for _, tc := range []struct {
		name string
		send func(c net.Conn)
	}{
		{"half a request", func(c net.Conn) { c.Write([]byte{0, 0, 0, 1, 0}) }},
		{"answer never read", func(c net.Conn) {
			req := binary.BigEndian.AppendUint32(nil, 1)
			req = binary.BigEndian.AppendUint64(req, 0)
			req = binary.BigEndian.AppendUint64(req, 64<<20)
			c.Write(req)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.(*net.TCPConn).SetReadBuffer(4 << 10)
			if err := WriteFrame(c, Hello{Transport: TCP}); err != nil {
				t.Fatal(err)
			}
			var w Welcome
			if err := ReadFrame(c, &w); err != nil || w.Error != "" {
				t.Fatalf("welcome %+v, %v", w, err)
			}
			tc.send(c)
			start := time.Now()
			for !strings.Contains(log.String(), c.LocalAddr().String()+": session ended") {
				if time.Since(start) > 10*time.Second {
					t.Fatalf("session not ended: log %q", log.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	c := mustDial(t, addr, DialOptions{})
	if err := c.ReadChunks(context.Background(), make([]byte, 4096), []Chunk{{Len: 4096}}); err != nil {
		t.Fatal(err)
	}
}
