package vllmsim

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/option"
)

// startLimited starts a simulator with cfg on a loopback port, as kvtier
// sim does.
func startLimited(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s := newSim(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	url, err := s.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return s, url
}

// apiErrorOf reads a vLLM error body: its status and message.
func apiErrorOf(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	var e errorResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e); err != nil {
		t.Fatalf("HTTP %d: body is not a JSON error: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, e.Error.Message
}

// endlessPrompt is a request body of a prompt that never ends.
type endlessPrompt struct{ started bool }

func (e *endlessPrompt) Read(p []byte) (int, error) {
	n := 0
	if !e.started {
		n = copy(p, `{"prompt": "`)
		e.started = true
	}
	for i := n; i < len(p); i++ {
		p[i] = "ab "[i%3]
	}
	return len(p), nil
}

// A prompt larger than the body limit is refused with 413 and a JSON
// error, having cost the simulator no more than the limit.
func TestHugePromptRefused(t *testing.T) {
	_, url := startLimited(t, Config{MaxModelLen: 4096, TimeScale: 0})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := http.Post(url+"/v1/completions", "application/json", io.LimitReader(&endlessPrompt{}, 200<<20))
	if err != nil {
		t.Fatal(err)
	}
	code, msg := apiErrorOf(t, resp)
	runtime.ReadMemStats(&after)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "request body larger than 1048576 bytes") {
		t.Errorf("HTTP %d %q", code, msg)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("a 200 MB prompt cost %d MiB", grew>>20)
	}
}

// Past MaxRequests at once, a request is answered 503 with a JSON error;
// past MaxConns, a connection is answered 503 and closed.
func TestRequestAndConnLimits(t *testing.T) {
	_, url := startLimited(t, Config{MaxRequests: 2, MaxConns: 3, TimeScale: 1})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range 2 { // two streams that go on for a while
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions",
			strings.NewReader(`{"prompt": "a b c", "max_tokens": 20000, "stream": true}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		bufio.NewReader(resp.Body).ReadString('\n')
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	if code, msg := apiErrorOf(t, resp); code != http.StatusServiceUnavailable || !strings.Contains(msg, "at most 2 requests at once") {
		t.Errorf("third request: HTTP %d %q", code, msg)
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, msg := apiErrorOf(t, resp); code != http.StatusServiceUnavailable || !strings.Contains(msg, "at most 3 connections") {
		t.Errorf("fourth connection: HTTP %d %q", code, msg)
	}
}

// A client that stops sending its body, or stops reading its stream, is
// dropped after the idle timeout: its place is free again.
func TestSimIdleClients(t *testing.T) {
	_, url := startLimited(t, Config{IdleTimeout: 300 * time.Millisecond, MaxRequests: 1, TimeScale: 0, GPUBlocks: 16384, MaxModelLen: 256 << 10})
	addr := strings.TrimPrefix(url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"pro"))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil && resp.StatusCode == http.StatusOK {
		t.Errorf("a half-sent body was answered 200")
	}
	// A stream never read: with no delay the simulator fills the socket
	// buffers at once (200,000 tokens are megabytes more than they hold),
	// then must give up on the client.
	r, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.(*net.TCPConn).SetReadBuffer(4 << 10)
	body := `{"prompt": "a b c", "max_tokens": 200000, "stream": true}`
	r.Write([]byte("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body))
	time.Sleep(100 * time.Millisecond)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url + "/health")
		if err == nil && resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		if err == nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("a client that reads nothing still holds its place: %v", err)
		}
	}
}

// TestBadConfigNamesFields: a configuration out of range is refused with
// option.Errors naming each field, as kvtier sim's flags name them.
func TestBadConfigNamesFields(t *testing.T) {
	t.Parallel()
	_, err := New(Config{BlockSize: -16, GPUBlocks: -1, CPUBlocks: -1, TimeScale: -1})
	want := []string{"block-size", "gpu-blocks", "cpu-blocks", "time-scale"}
	if got := option.Fields(err); !slices.Equal(got, want) {
		t.Errorf("fields %v, want %v (error %v)", got, want, err)
	}
	if err == nil || !strings.Contains(err.Error(), "block-size: want more than 0, got -16") {
		t.Errorf("error %v", err)
	}
}
