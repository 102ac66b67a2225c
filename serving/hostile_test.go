package serving

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostile is a server that misbehaves in the way its handler says; it
// answers GET /v1/models unless the handler has path "/" in its name.
func hostile(t *testing.T, name string, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // else the server does not see the client go
		if r.URL.Path == "/v1/models" && !strings.Contains(name, "/") {
			w.Write([]byte(`{"data":[]}`))
			return
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Idle = 300 * time.Millisecond
	return c
}

// endless writes data forever, until the client goes.
func endless(w http.ResponseWriter, r *http.Request, data string) {
	b := []byte(strings.Repeat(data, 64<<10/len(data)+1))
	for r.Context().Err() == nil {
		if _, err := w.Write(b); err != nil {
			return
		}
	}
}

// A server that misbehaves makes each request fail within the idle
// timeout or at a cap, naming why; one that is slow but keeps sending is
// read to the end.
func TestHostileServer(t *testing.T) {
	t.Parallel()
	event := "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n"
	stream := Request{Model: "m", Prompt: []int{1, 2}, MaxTokens: 3}
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		call    func(context.Context, *Client) error
		want    string // in the error; "" for success
	}{
		{"silent before headers, GET /v1/models", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			func(ctx context.Context, c *Client) error { _, err := c.Models(ctx); return err },
			"sent no response headers for 300ms (idle timeout)"},
		{"frozen server, generation /", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			func(ctx context.Context, c *Client) error { _, err := c.Stream(ctx, stream, nil); return err },
			"sent no answer, nor any to GET /v1/models, for 300ms (idle timeout)"},
		{"frozen server, non-streamed generation /", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			func(ctx context.Context, c *Client) error { _, err := c.Complete(ctx, stream); return err },
			"sent no answer, nor any to GET /v1/models, for 300ms (idle timeout)"},
		{"long prefill on a live server", func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Second) // no headers either, as behind a P/D proxy
			w.Write([]byte(`{"choices":[{"finish_reason":"length"}]}`))
		}, func(ctx context.Context, c *Client) error { _, err := c.Complete(ctx, stream); return err }, ""},
		{"silent after headers", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("vllm:num_requests_running 1\n"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, func(ctx context.Context, c *Client) error { _, err := c.Metrics(ctx, "m"); return err },
			"sent no data for 300ms (idle timeout)"},
		{"endless GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"data":[{"id":"`))
			endless(w, r, "a")
		}, func(ctx context.Context, c *Client) error { _, err := c.Models(ctx); return err },
			"GET /v1/models body exceeds 16 MiB"},
		{"endless /metrics", func(w http.ResponseWriter, r *http.Request) { endless(w, r, "# comment\n") },
			func(ctx context.Context, c *Client) error { _, err := c.Metrics(ctx, "m"); return err },
			"GET /metrics body exceeds 16 MiB"},
		{"endless completion", func(w http.ResponseWriter, r *http.Request) { endless(w, r, " ") },
			func(ctx context.Context, c *Client) error { _, err := c.Complete(ctx, stream); return err },
			"POST /v1/completions body exceeds 16 MiB"},
		{"endless stream line", func(w http.ResponseWriter, r *http.Request) { endless(w, r, "data: x") },
			func(ctx context.Context, c *Client) error { _, err := c.Stream(ctx, stream, nil); return err },
			"stream line exceeds 4 MiB"},
		{"stream silent after its first event", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(event))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, func(ctx context.Context, c *Client) error { _, err := c.Stream(ctx, stream, nil); return err },
			"sent no data for 300ms (idle timeout)"},
		{"stream of more tokens than asked", func(w http.ResponseWriter, r *http.Request) { endless(w, r, event) },
			func(ctx context.Context, c *Client) error { _, err := c.Stream(ctx, stream, nil); return err },
			"more than 22 tokens, far past its max_tokens"},
		{"slow drip that progresses", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			time.Sleep(time.Second) // the time to first token is not idle time
			for range 3 {
				w.Write([]byte(event))
				w.(http.Flusher).Flush()
				time.Sleep(100 * time.Millisecond) // each gap a third of the idle timeout, so load on the test machine does not make it one
				w.Write([]byte(":\n"))
				w.(http.Flusher).Flush()
			}
			w.Write([]byte("data: [DONE]\n\n"))
		}, func(ctx context.Context, c *Client) error { _, err := c.Stream(ctx, stream, nil); return err }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := hostile(t, tc.name, tc.handler)
			if tc.want != "" && !strings.Contains(tc.want, "idle timeout") {
				// A case about a cap must end at the cap: a server starved
				// of CPU (-race, a loaded machine) is not idle.
				c.Idle = 10 * time.Second
			}
			start := time.Now()
			err := tc.call(t.Context(), c)
			took := time.Since(start)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			case took > 10*time.Second:
				t.Fatalf("took %s", took)
			}
			var ie *IdleError
			if strings.Contains(tc.want, "idle timeout") && !errors.As(err, &ie) {
				t.Errorf("%v is not an *IdleError", err)
			}
		})
	}
}

// An endless body costs no more memory than the cap.
func TestEndlessBodyBounded(t *testing.T) {
	c := hostile(t, "endless", func(w http.ResponseWriter, r *http.Request) { endless(w, r, "# comment\n") })
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := c.Metrics(t.Context(), "m"); err == nil {
		t.Fatal("an endless /metrics was read to its end")
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 6*MaxMetricsBytes {
		t.Errorf("reading an endless /metrics allocated %d MiB", grew>>20)
	}
}

// Credentials in the endpoint go as HTTP basic auth, never in the URL
// the client writes or in its errors.
func TestBasicAuth(t *testing.T) {
	t.Parallel()
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); ok {
			got = u + ":" + p
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	c, err := NewClient(strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1)+"/v1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Models(t.Context())
	if got != "user:hunter2" {
		t.Errorf("server saw basic auth %q", got)
	}
	if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(c.Base, "hunter2") {
		t.Errorf("error %v, base %q", err, c.Base)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	c, _ = NewClient("http://user:hunter2@"+addr, time.Second)
	if _, err := c.Models(t.Context()); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("unreachable: error %v", err)
	}
	if _, err := NewClient("ftp://user:hunter2@h", time.Second); err == nil || strings.Contains(fmt.Sprint(err), "hunter2") {
		t.Errorf("bad scheme: error %v", err)
	}
}
