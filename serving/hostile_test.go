package serving

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
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
	"unicode"
	"unicode/utf8"
)

// hostileIdle is the idle timeout of the hostile cases: wide enough
// that a race run on a loaded 2-core machine (the VM tests beside it)
// never starves a live server into one (300ms did, in CI), and short
// enough that the silent cases end in a couple of seconds.
const hostileIdle = 2 * time.Second

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
	c.Idle = hostileIdle
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
			"sent no response headers for 2s (idle timeout)"},
		{"frozen server, generation /", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			func(ctx context.Context, c *Client) error { _, err := c.Stream(ctx, stream, nil); return err },
			"sent no answer, nor any to GET /v1/models, for 2s (idle timeout)"},
		{"frozen server, non-streamed generation /", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			func(ctx context.Context, c *Client) error { _, err := c.Complete(ctx, stream); return err },
			"sent no answer, nor any to GET /v1/models, for 2s (idle timeout)"},
		{"an HTML login page /", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<!DOCTYPE html><html><body>Sign in</body></html>")
		}, func(ctx context.Context, c *Client) error { _, err := c.Stream(ctx, stream, nil); return err },
			"the server answered HTML"},
		{"long prefill on a live server", func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(hostileIdle + time.Second) // no headers either, as behind a P/D proxy
			w.Write([]byte(`{"choices":[{"finish_reason":"length"}]}`))
		}, func(ctx context.Context, c *Client) error { _, err := c.Complete(ctx, stream); return err }, ""},
		{"silent after headers", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("vllm:num_requests_running 1\n"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, func(ctx context.Context, c *Client) error { _, err := c.Metrics(ctx, "m"); return err },
			"sent no data for 2s (idle timeout)"},
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
			"sent no data for 2s (idle timeout)"},
		{"stream of more tokens than asked", func(w http.ResponseWriter, r *http.Request) { endless(w, r, event) },
			func(ctx context.Context, c *Client) error { _, err := c.Stream(ctx, stream, nil); return err },
			"more than 22 tokens, far past its max_tokens"},
		{"slow drip that progresses", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			time.Sleep(hostileIdle + time.Second) // the time to first token is not idle time
			for range 3 {
				w.Write([]byte(event))
				w.(http.Flusher).Flush()
				time.Sleep(hostileIdle / 40) // each gap a fortieth of the idle timeout, so load on the test machine does not make it one
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
			case took >= c.Timeout:
				// Each case ends at its own bound, named in its error, before
				// the request's timeout: a slow race run on a loaded machine
				// takes seconds, a hang takes the timeout.
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

// raw writes s on the connection under w, bypassing net/http's framing,
// and closes it.
func raw(w http.ResponseWriter, s string) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	buf.WriteString(s)
	buf.Flush()
}

// gzipped is s compressed with gzip.
func gzipped(s string) []byte {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	z.Write([]byte(s))
	z.Close()
	return b.Bytes()
}

// blanks is a gzip stream that expands to n MiB of blanks: one member
// of a MiB, repeated (a gzip reader reads concatenated members as one
// stream), so the bomb costs the test nothing to build.
func blanks(n int) []byte {
	return bytes.Repeat(gzipped(strings.Repeat(" ", 1<<20)), n)
}

// Malformed streams and transports: each request ends with an error
// naming the fault, within its bounds (the idle timeout, the request
// timeout, a cap), or reads what is sound in it to its end.
func TestHostileStreams(t *testing.T) {
	t.Parallel()
	ev := func(s string) string { return "data: " + s + "\n\n" }
	choice := ev(`{"choices":[{"text":"a"}]}`)
	usageOf := func(u string) string { return ev(`{"choices":[],"usage":` + u + `}`) }
	done := "data: [DONE]\n\n"
	stream := func(ctx context.Context, c *Client) error {
		_, err := c.Stream(ctx, Request{Model: "m", Prompt: []int{1, 2}, MaxTokens: 3}, nil)
		return err
	}
	models := func(ctx context.Context, c *Client) error { _, err := c.Models(ctx); return err }
	sse := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, body)
		}
	}
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		call    func(context.Context, *Client) error
		want    string // in the error; "" for success
		timeout time.Duration
	}{
		{"one line past the cap", sse("data: " + strings.Repeat("x", MaxEventBytes) + "\n\n" + done), stream, "stream line exceeds 4 MiB", 0},
		{"no newline ever", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("data: {"))
			endless(w, r, `"a":1,`)
		}, stream, "stream line exceeds 4 MiB", 0},
		{"data after [DONE]", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, choice+usageOf(`{"prompt_tokens":2,"completion_tokens":1}`)+done)
			endless(w, r, choice)
		}, stream, "", 0},
		{"invalid JSON mid-stream", sse(choice + ev(`{"choices":[{"text":`) + choice + done), stream, `event 2 is not JSON: "{\"choices\":[{\"text\":"`, 0},
		// Counts no server holds are impossible figures (TestImpossibleFigures), not a failed request.
		{"a count past any integer", sse(choice + usageOf(`{"prompt_tokens":1e300,"completion_tokens":1}`) + done), stream, "", 0},
		{"a negative count", sse(choice + usageOf(`{"prompt_tokens":2,"completion_tokens":-5}`) + done), stream, "", 0},
		{"usage not an object", sse(choice + usageOf(`"lots"`) + done), stream, "is not a chunk", 0},
		{"not UTF-8", sse(choice + "data: \xff\xfe{\xc3\x28}\n\n" + done), stream, "is not JSON", 0},
		{"not UTF-8 inside a string", sse(ev("{\"choices\":[{\"text\":\"\xff\xfe\"}]}") + done), stream, "", 0},
		{"closed mid-chunk", func(w http.ResponseWriter, r *http.Request) {
			raw(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
				fmt.Sprintf("%x\r\n%s\r\n", len(choice), choice)+"40\r\ndata: {\"choi")
		}, stream, "unexpected EOF", 0},
		{"HTTP/1.0 without Content-Length, read to the close", func(w http.ResponseWriter, r *http.Request) {
			raw(w, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+choice+usageOf(`{"prompt_tokens":2,"completion_tokens":1}`)+done)
		}, stream, "", 0},
		{"HTTP/1.0 without Content-Length, cut", func(w http.ResponseWriter, r *http.Request) {
			raw(w, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"+choice)
		}, stream, "stream ended without [DONE] and without usage", 0},
		{"gzip stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gzipped(choice + usageOf(`{"prompt_tokens":2,"completion_tokens":1}`) + done))
		}, stream, "", 0},
		{"gzip that is not /", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			io.WriteString(w, `{"data":[]}`)
		}, models, "gzip: invalid header", 0},
		{"redirect to another host /", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:9"+r.URL.Path, http.StatusFound)
		}, models, `127.0.0.1:9/v1/models": redirected to another host`, 0},
		{"redirect of a generation to another host /", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:9"+r.URL.Path, http.StatusTemporaryRedirect)
		}, stream, `127.0.0.1:9/v1/completions": redirected to another host`, 0},
		{"redirect loop /", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path, http.StatusFound)
		}, models, "stopped after 10 redirects", 0},
		{"redirect loop on a generation /", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
		}, stream, "stopped after 10 redirects", 0},
		{"drip that never ends an event", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("data: {"))
			for r.Context().Err() == nil {
				w.Write([]byte(" "))
				w.(http.Flusher).Flush()
				time.Sleep(50 * time.Millisecond)
			}
		}, stream, "context deadline exceeded", 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := hostile(t, tc.name, tc.handler)
			c.Idle = 10 * time.Second // these faults are not silence
			if tc.timeout > 0 {
				c.Timeout = tc.timeout
			}
			start := time.Now()
			err := tc.call(t.Context(), c)
			took := time.Since(start)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			case err != nil && (!utf8.ValidString(err.Error()) || strings.ContainsAny(err.Error(), "\r\n")):
				t.Errorf("error %q is not one line of UTF-8", err)
			case tc.timeout == 0 && took >= c.Timeout:
				t.Fatalf("took %s, the request's timeout", took) // the error's bound, not the timeout, must end it
			}
		})
	}
}

// A stream that goes on after [DONE], and a gzip bomb (one answer that
// expands past the cap), cost no more memory than the caps. Not
// parallel: decompressing the bomb under the race detector is slow
// enough to starve the idle-timeout cases beside it.
func TestHostileGrowthBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		call    func(context.Context, *Client) error
	}{
		{"data after [DONE]", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
			endless(w, r, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
		}, func(ctx context.Context, c *Client) error {
			_, err := c.Stream(ctx, Request{Model: "m", Prompt: []int{1}, MaxTokens: 1}, nil)
			return err
		}},
		{"gzip bomb", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(blanks(24))
		}, func(ctx context.Context, c *Client) error {
			_, err := c.Metrics(ctx, "m")
			if err == nil || !strings.Contains(err.Error(), "GET /metrics body exceeds 16 MiB") {
				return fmt.Errorf("a gzip bomb: error %v, want the cap", err)
			}
			return nil
		}},
	} {
		c := hostile(t, tc.name, tc.handler)
		c.Idle = 30 * time.Second // a loaded race run decompresses slowly, but never stops
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := tc.call(t.Context(), c); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 6*MaxMetricsBytes {
			t.Errorf("%s: allocated %d MiB", tc.name, grew>>20)
		}
	}
}

// Every string a server sends reaches kvtier clipped and without control
// characters: a 4 MiB version, an escape sequence and a newline in a
// version, a model's name, an error's message and a metric's label.
func TestServerStringsClean(t *testing.T) {
	t.Parallel()
	for _, said := range []string{strings.Repeat("9", 4<<20), "0.0.1\u001b[2J\nINJECTED", "a\u202ebidi\x00\x7f\u0085\xff"} {
		// The 4 MiB string goes to GET /version only; elsewhere its first
		// kilobyte is enough (and keeps a race run short).
		js, _ := json.Marshal(said)
		short, _ := json.Marshal(said[:min(len(said), 1<<10)])
		prom := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(said[:min(len(said), 1<<10)]) + `"`
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/version":
				fmt.Fprintf(w, `{"version":%s}`, js)
			case "/api/version":
				fmt.Fprintf(w, `{"version":%s}`, short)
			case "/v1/models":
				fmt.Fprintf(w, `{"data":[{"id":%s,"owned_by":%s}]}`, short, short)
			case "/metrics":
				fmt.Fprintf(w, "vllm:cache_config_info{block_size=%s} 1\n", prom)
			case "/v1/completions":
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: {\"error\":{\"message\":%s,\"code\":%s}}\n\n", short, short)
			default:
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"message":%s}}`, short)
			}
		}))
		defer srv.Close()
		c, err := NewClient(srv.URL, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var got []string
		v, err := c.Version(ctx)
		got = append(got, v, fmt.Sprint(err))
		models, err := c.Models(ctx)
		for _, m := range models {
			got = append(got, m.ID, m.OwnedBy)
		}
		got = append(got, fmt.Sprint(err), c.DetectFamily(ctx).String())
		_, err = c.Stream(ctx, Request{Model: "m", Prompt: []int{1}, MaxTokens: 1}, nil)
		got = append(got, fmt.Sprint(err))
		_, err = c.Tokenize(ctx, "m", "x")
		got = append(got, fmt.Sprint(err))
		snap, err := c.Metrics(ctx, "")
		got = append(got, fmt.Sprint(err), snap.CacheConfig["block_size"])
		for i, s := range got {
			if utf8.RuneCountInString(s) > 2*MaxServerText+100 || strings.ContainsFunc(s, func(r rune) bool {
				return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
			}) || !utf8.ValidString(s) {
				t.Errorf("%.20q: string %d is %d characters: %.120q", said, i, utf8.RuneCountInString(s), s)
			}
		}
		if !strings.Contains(got[0], "INJECTED") && !strings.HasPrefix(got[0], "999") && !strings.Contains(got[0], "bidi") {
			t.Errorf("%.20q: version %q lost its text", said, got[0])
		}
	}
}

func TestServerText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"0.8.5", "0.8.5"},
		{"0.0.1\u001b[2J\nINJECTED", "0.0.1[2J INJECTED"},
		{"  a \t\r\n b  ", "a b"},
		{"a\xffb", "a?b"},
		{"x\u202eevil\u200f", "xevil"},
		{strings.Repeat("é", 300), strings.Repeat("é", MaxServerText) + "..."},
		{strings.Repeat("a", 255) + " b", strings.Repeat("a", 255) + "..."},
		{strings.Repeat("a", 256), strings.Repeat("a", 256)},
	} {
		if got := ServerText(tc.in); got != tc.want {
			t.Errorf("ServerText(%.40q) = %.60q, want %.60q", tc.in, got, tc.want)
		}
	}
}
