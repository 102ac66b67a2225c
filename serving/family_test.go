package serving

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvtier/kvtier/serving/servingtest"
)

func newFamily(t *testing.T, h http.Handler) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Each family is told apart by what its source answers; TensorRT-LLM,
// whose GET /version answers as vLLM's does, by its owned_by.
func TestDetectFamily(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		h    http.Handler
		want string
	}{
		{&servingtest.Server{Family: servingtest.VLLM}, FamilyVLLM},
		{&servingtest.Server{Family: servingtest.SGLang}, FamilySGLang},
		{&servingtest.Server{Family: servingtest.LlamaCpp}, FamilyLlamaCpp},
		{&servingtest.Server{Family: servingtest.TGI}, FamilyTGI},
		{&servingtest.Server{Family: servingtest.TRTLLM}, FamilyTRTLLM},
		{&servingtest.Ollama{}, FamilyOllama},
		{http.NotFoundHandler(), FamilyOpenAI},
	} {
		c := newFamily(t, tt.h)
		if f := c.DetectFamily(t.Context()); f.Name != tt.want {
			t.Errorf("%T detected as %v, want %s", tt.h, f, tt.want)
		}
	}
}

// The family is asked once per client.
func TestDetectFamilyOnce(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	f := &servingtest.Server{Family: servingtest.TGI}
	c := newFamily(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		f.ServeHTTP(w, r)
	}))
	c.DetectFamily(t.Context())
	asked := n.Load()
	if got := c.With(0, 0).DetectFamily(t.Context()); got.Name != FamilyTGI || n.Load() != asked {
		t.Errorf("second detection: %v after %d more requests", got, n.Load()-asked)
	}
}

// Every family's stream shapes, replayed through its fake and the
// client: the tokens counted (a final chunk's usage is no running
// count), the prompt tokens and the cached tokens the server reported,
// and where the count came from.
func TestFamilyStreams(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		family   string
		api      string
		counting string
		form     string
		cached   string // Stream.Cached's source; "" none
	}{
		{servingtest.VLLM, APICompletions, CountTokenIDs, FormTokenIDs, CachedFromUsage},
		{servingtest.VLLM, APIChat, CountTokenIDs, FormChat, CachedFromUsage},
		{servingtest.SGLang, APICompletions, CountTokenIDs, FormTokenIDs, CachedFromUsage},
		{servingtest.SGLang, APIChat, CountTokenIDs, FormChat, CachedFromUsage},
		{servingtest.LlamaCpp, APICompletions, CountChunks, FormTokenIDs, CachedFromTimings},
		{servingtest.LlamaCpp, APIChat, CountChunks, FormChat, CachedFromTimings},
		{servingtest.TGI, APICompletions, CountChunks, FormText, ""},
		{servingtest.TGI, APIChat, CountChunks, FormChat, ""},
		{servingtest.TRTLLM, APICompletions, CountUsage, FormTokenIDs, CachedFromUsage},
		{servingtest.TRTLLM, APIChat, CountUsage, FormChat, CachedFromUsage},
	} {
		t.Run(tt.family+" "+tt.api, func(t *testing.T) {
			t.Parallel()
			c := newFamily(t, &servingtest.Server{Family: tt.family})
			req := Request{API: tt.api, Model: "m", Prompt: TokenIDs(1, 2, 40), MaxTokens: 3, CountTokens: true}
			if tt.api == APIChat {
				req.Text = strings.Repeat("w ", 40)
			}
			var last Stream
			for i := range 2 {
				s, err := c.Stream(t.Context(), req, nil)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if s.Tokens() != 3 || s.Counting != tt.counting || s.Form != tt.form {
					t.Fatalf("request %d: %d tokens counted by %s, form %s; want 3 by %s, form %s", i, s.Tokens(), s.Counting, s.Form, tt.counting, tt.form)
				}
				if s.Usage == nil || s.Usage.PromptTokens < 40 || s.Usage.CompletionTokens != 3 {
					t.Fatalf("request %d: usage %+v", i, s.Usage)
				}
				last = s
			}
			n, src, ok := last.Cached()
			if src != tt.cached || (ok && n < 40) {
				t.Errorf("repeated prompt: cached %d from %q (%v), want at least 40 from %q", n, src, ok, tt.cached)
			}
		})
	}
}

// A server without /metrics (404) is asked once; one that answers JSON
// there (TensorRT-LLM) is an error saying so.
func TestMetricsAbsentAskedOnce(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	c := newFamily(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			n.Add(1)
		}
		http.NotFound(w, r)
	}))
	for range 3 {
		if _, err := c.Metrics(t.Context(), "m"); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
			t.Fatalf("err = %v", err)
		}
	}
	if n.Load() != 1 {
		t.Errorf("GET /metrics asked %d times, want 1", n.Load())
	}
	c = newFamily(t, &servingtest.Server{Family: servingtest.TRTLLM})
	if _, err := c.Metrics(t.Context(), "m"); err == nil || !strings.Contains(err.Error(), "JSON, not Prometheus") {
		t.Errorf("TensorRT-LLM /metrics: err = %v", err)
	}
}

// Families without a KV pool a launch option sizes say why; the others
// name the option.
func TestFamilyTraits(t *testing.T) {
	t.Parallel()
	for _, name := range Families() {
		tr := TraitsOf(name)
		if tr.Name != name || (tr.Pool == "") == (tr.NoPool == "") && name != FamilyOpenAI {
			t.Errorf("%s: traits %+v", name, tr)
		}
	}
	if ok, why := (Family{Name: FamilyOllama}).KVPool(); ok || why == "" {
		t.Error("Ollama has a KV pool")
	}
	if ok, _ := (Family{Name: FamilyLlamaCpp}).KVPool(); !ok {
		t.Error("llama.cpp has no KV pool")
	}
	if TraitsOf("nonesuch").Name != FamilyOpenAI {
		t.Error("an unknown family is not openai")
	}
}

// Slots come from the family's own report where it has one, and are
// unknown (0) where it has none or says nothing sensible.
func TestSlots(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		h      http.Handler
		n      int
		source string
	}{
		{&servingtest.Server{Family: servingtest.LlamaCpp}, 4, "llama.cpp server: GET /props total_slots"},
		{&servingtest.Server{Family: servingtest.SGLang}, 8, "SGLang: GET /get_server_info max_running_requests"},
		{&servingtest.Server{Family: servingtest.VLLM}, 0, ""},
		{&servingtest.Ollama{}, 0, ""},
		{http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/v1/models":
				w.Write([]byte(`{"data":[{"id":"m","owned_by":"llamacpp"}]}`))
			case "/props":
				w.Write([]byte(`{"default_generation_settings":{},"total_slots":-3}`))
			}
		}), 0, ""},
	} {
		c := newFamily(t, tt.h)
		if got := c.Slots(t.Context()); got.N != tt.n || got.Source != tt.source {
			t.Errorf("%T: %+v, want %d from %q", tt.h, got, tt.n, tt.source)
		}
	}
}

// What a family lacks is said in its own words: vLLM's metric names only
// for vLLM (and servers that may be it), Ollama's log for Ollama.
func TestFamilyWords(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		family     string
		want, none string
	}{
		{FamilyVLLM, "vllm", "Ollama"},
		{FamilyOpenAI, "vllm", "Ollama"},
		{FamilyOllama, "Ollama", "vllm"},
		{FamilySGLang, "SGLang", "vllm"},
	} {
		f := Family{Name: tt.family}
		for _, said := range []string{f.NoPoolSize(), f.NoCounters(nil), f.NoCachedTokens()} {
			if !strings.Contains(said, tt.want) && !strings.Contains(said, "the server") || strings.Contains(said, tt.none) {
				t.Errorf("%s: %q", tt.family, said)
			}
		}
	}
	if said := (Family{Name: FamilyOllama}).NoCachedTokens(); !strings.Contains(said, "OLLAMA_DEBUG=1") || !strings.Contains(said, "--server-log") {
		t.Errorf("Ollama's cached tokens: %q, want how its log counts them", said)
	}
}
