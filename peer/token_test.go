package peer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/pattern"
)

func TestRunToken(t *testing.T) {
	t.Parallel()
	addr, _ := startServerConfig(t, 1<<20, 5, ServerConfig{Token: "s3cret"})
	tests := []struct {
		name, token string
		ok          bool
	}{
		{"right token", "s3cret", true},
		{"no token", "", false},
		{"wrong token", "s3cre", false},
		{"longer token", "s3cret!", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(context.Background(), addr, DialOptions{Token: tc.token, Timeout: 5 * time.Second})
			if !tc.ok {
				if err == nil {
					c.Close()
					t.Fatal("a client without the run token was served")
				}
				if !strings.Contains(err.Error(), "token") {
					t.Fatalf("refusal %q does not name the token", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			dst := make([]byte, 4096)
			if err := c.ReadChunks(context.Background(), dst, []Chunk{{Src: 8192, Len: 4096}}); err != nil {
				t.Fatal(err)
			}
			if err := pattern.Check(dst, 5, 8192); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The longest token a run may have reaches the server in a hello even
// when every byte is one JSON escapes six bytes long; one byte more is
// refused by the client before it dials, saying why.
func TestLongestToken(t *testing.T) {
	t.Parallel()
	longest := strings.Repeat("<", MaxToken)
	addr, _ := startServerConfig(t, 1<<20, 5, ServerConfig{Token: longest})
	c, err := Dial(context.Background(), addr, DialOptions{Token: longest, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("the longest token: %v", err)
	}
	c.Close()
	_, err = Dial(context.Background(), addr, DialOptions{Token: longest + "<", Timeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "a hello carries at most 4096") {
		t.Errorf("a token one byte too long: %v", err)
	}
}

// frameOf is a frame of version ver holding the JSON of v, as a kvtier
// of that version writes it.
func frameOf(t *testing.T, ver uint16, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeFrameVersion(&buf, ver, v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An old (version 1) client is refused in a frame it can read, naming
// both versions; a new client shows what an old server said.
func TestVersionMismatchBothWays(t *testing.T) {
	t.Parallel()
	addr, _ := startServer(t, 1<<20, 1)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(frameOf(t, 1, map[string]string{"transport": "tcp"}))
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hdr [len(Magic) + 6]byte
	if _, err := conn.Read(hdr[:]); err != nil {
		t.Fatal(err)
	}
	if v := binary.BigEndian.Uint16(hdr[len(Magic):]); v != 1 {
		t.Fatalf("refusal of a version 1 hello written as version %d: an old client cannot read it", v)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[len(Magic)+2:]))
	if _, err := conn.Read(body); err != nil {
		t.Fatal(err)
	}
	var w struct{ Error string }
	json.Unmarshal(body, &w)
	if !strings.Contains(w.Error, "version 1") || !strings.Contains(w.Error, "speaks 2") {
		t.Fatalf("refusal %q does not name both versions", w.Error)
	}

	// The other way: an old server's refusal, read by this client.
	old := frameOf(t, 1, map[string]string{"error": "protocol version 2, this kvtier speaks 1"})
	var nw Welcome
	err = ReadFrame(bytes.NewReader(old), &nw)
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Got != 1 {
		t.Fatalf("old server's frame: %v, want a VersionError of version 1", err)
	}
	if !strings.Contains(err.Error(), "it said: protocol version 2, this kvtier speaks 1") {
		t.Fatalf("error %q drops what the old server said", err)
	}
}

// A connection that never says hello is closed after the handshake
// timeout.
func TestSilentClientDropped(t *testing.T) {
	t.Parallel()
	addr, _ := startServerConfig(t, 1<<20, 1, ServerConfig{HandshakeTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	var w Welcome
	err = ReadFrame(conn, &w)
	if err != nil && !strings.Contains(err.Error(), "closed") {
		t.Fatalf("silent client: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("silent client held for %v", d)
	}
}

// silentPeer shakes hands like a server and then never answers a read.
func silentPeer(t *testing.T) string {
	return rawPeer(t, func(c net.Conn) {
		var h Hello
		ReadFrame(c, &h)
		WriteFrame(c, Welcome{PoolBytes: 1 << 20, Mem: HostMem, Transport: TCP})
		t.Cleanup(func() { c.Close() })
	})
}

// rawPeer listens on loopback until the test ends and hands each
// connection to serve, one at a time; it returns the address.
func rawPeer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c)
		}
	}()
	return ln.Addr().String()
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	addr := silentPeer(t)
	c := mustDial(t, addr, DialOptions{IdleTimeout: 300 * time.Millisecond})
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- c.ReadChunks(context.Background(), make([]byte, 4096), []Chunk{{Len: 4096}}) }()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "idle timeout") || !strings.Contains(err.Error(), addr) {
			t.Fatalf("read from a silent peer: %v", err)
		}
		if d := time.Since(start); d < 250*time.Millisecond {
			t.Fatalf("gave up after %v, before the idle timeout", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read from a silent peer did not end")
	}
	// A cancelled read still ends at once with the context's error.
	c2 := mustDial(t, addr, DialOptions{IdleTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c2.ReadChunks(ctx, make([]byte, 4096), []Chunk{{Len: 4096}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled read: %v", err)
	}
}

// A client aimed at a web server's port (a serving engine's, by
// mistake) is told at once that it reached no kvtier peer: the newline
// ending its hello makes the server refuse the line in HTTP, which the
// client recognises, where it used to wait out its handshake timeout.
func TestDialHTTPPort(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	// Python's http.server takes a line without a version for HTTP/0.9
	// and answers an HTML page without a status line.
	py := rawPeer(t, func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n')
		c.Write([]byte("<!DOCTYPE HTML>\n<html><body>Error code: 400</body></html>\n"))
		c.Close()
	})
	for _, addr := range []string{strings.TrimPrefix(srv.URL, "http://"), py} {
		for _, write := range []bool{false, true} {
			_, err := Dial(context.Background(), addr, DialOptions{Write: write, Timeout: time.Minute})
			if err == nil || !strings.Contains(err.Error(), "answered in HTTP: not a kvtier peer") {
				t.Errorf("%s, write %v: %v", addr, write, err)
			}
		}
	}
}
