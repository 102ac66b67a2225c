package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/internal/syncbuf"
	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
)

// startServe runs kvtier serve in this process until the returned stop
// is called, and returns the address from its ready line.
func startServe(t *testing.T, args ...string) (addr string, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, &stdout, &stderr, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...))
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := stdout.String()
		if i := strings.Index(out, "listening on "); i >= 0 && strings.Contains(out[i:], "\n") {
			addr = strings.Fields(out[i+len("listening on "):])[0]
			break
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited %d before it was ready: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("serve did not print its ready line")
		}
		time.Sleep(5 * time.Millisecond)
	}
	exited := false
	code := 0
	stop = func() int {
		if !exited {
			cancel()
			select {
			case code = <-done:
			case <-time.After(10 * time.Second):
				t.Error("serve did not exit after cancel")
			}
			exited = true
		}
		return code
	}
	t.Cleanup(func() { stop() })
	return addr, stop
}

func TestServeBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--pool", "0", "--mem", "disk"}, []string{"--pool", "--mem: want host or gpu, got \"disk\""}},
		{[]string{"--transport", "udp", "--listen", "nowhere"}, []string{"--transport: want tcp or verbs, got \"udp\"", "--listen: \"nowhere\": want HOST:PORT"}},
		{[]string{"extra"}, []string{"unexpected argument"}},
		{[]string{"--listen", ":99999"}, []string{"--listen: port 99999: want 0 to 65535"}},
		{[]string{"--ib-tc", "106"}, []string{"--ib-tc: 106 applies to RDMA queue pairs, and transport tcp has none"}},
		// A writable pool beyond loopback needs a token, and a token
		// must fit in a hello.
		{[]string{"--writable", "--listen", "0.0.0.0:0"}, []string{"--writable: 0.0.0.0:0 reaches beyond loopback", "give --token"}},
		{[]string{"--writable", "--listen", ":0"}, []string{"--writable: :0 reaches beyond loopback"}},
		{[]string{"--writable", "--listen", "nodeB:0"}, []string{"--writable: nodeB:0 reaches beyond loopback"}},
		{[]string{"--token", strings.Repeat("t", 5000)}, []string{"--token: the run token is 5000 bytes; a hello carries at most 4096"}},
		{[]string{"KVTIER_TOKEN=" + strings.Repeat("t", 5000)}, []string{"--token: $KVTIER_TOKEN: the run token is 5000 bytes"}},
	} {
		if env, ok := strings.CutPrefix(tc.args[0], "KVTIER_TOKEN="); ok {
			t.Setenv("KVTIER_TOKEN", env)
			tc.args = nil
		}
		code, _, stderr := runCLI(t, append([]string{"serve"}, tc.args...)...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, stderr, w)
			}
		}
	}
}

func TestLoopback(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{"127.0.0.1": true, "127.9.9.9": true, "::1": true, "localhost": true,
		"": false, "0.0.0.0": false, "::": false, "10.0.0.1": false, "nodeB": false} {
		if got := loopback(host); got != want {
			t.Errorf("loopback(%q) = %v, want %v", host, got, want)
		}
	}
}

// An address already taken is refused before the pool is filled: a
// pool larger than this machine's memory would have been the error
// otherwise, after minutes of filling one that fits.
func TestServeListensFirst(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := runCLI(t, "serve", "--listen", ln.Addr().String(), "--pool", "1TiB")
	if code != exitUsage || !strings.Contains(stderr, "--listen") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want 2 and one line naming --listen", code, stderr)
	}
}

func TestServeVerbsWithoutDevice(t *testing.T) {
	if names, err := rdma.DeviceNames(""); err == nil && len(names) > 0 {
		t.Skipf("this machine has RDMA devices %v", names)
	}
	code, stdout, stderr := runCLI(t, "serve", "--transport", "verbs", "--listen", "127.0.0.1:0", "--pool", "1MiB")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "no RDMA device") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestServeAnswersAndStops(t *testing.T) {
	addr, stop := startServe(t, "--pool", "8MiB", "--seed", "77")
	if h, _, _ := net.SplitHostPort(addr); h != "127.0.0.1" {
		t.Fatalf("serve bound %s", addr)
	}
	c, err := peer.Dial(context.Background(), addr, peer.DialOptions{Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Info().Seed != 77 || c.Info().PoolBytes != 8<<20 {
		t.Fatalf("info %+v", c.Info())
	}
	dst := make([]byte, 1<<20)
	if err := c.ReadChunks(context.Background(), dst, []peer.Chunk{{Src: 3 << 20, Len: 1 << 20}}); err != nil {
		t.Fatal(err)
	}
	if err := pattern.Check(dst, 77, 3<<20); err != nil {
		t.Fatal(err)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit %d after cancel", code)
	}
}
