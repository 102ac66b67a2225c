package probe

import (
	"encoding/json"
	"fmt"
	"github.com/kvtier/kvtier/serving"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeVLLM is a small stand-in for a vLLM server that speaks its wire
// format exactly: /v1/models, /metrics with the V1 counter names, and
// streamed /v1/completions. Its prefix cache is a set of whole prompts
// (with their salt); a repeated prompt hits all but the last block.
type fakeVLLM struct {
	mu          sync.Mutex
	blockSize   int
	gpuBlocks   int // 0: no cache_config_info
	noSalt      bool
	cached      map[string]bool
	hits, qs    float64
	requests    []map[string]any
	ids         []string
	failNext    func(w http.ResponseWriter) bool // handles a completion itself when true
	cachedField bool                             // send prompt_tokens_details
	noMetrics   bool                             // /metrics answers 404
	lieCached   int                              // >0: report this many cached tokens, whatever the prompt
	lieOutput   int                              // >0: report this completion_tokens
	lagStep     float64                          // >0: kvtier_sim_lag_seconds, which rises by this per completion
	lag         float64
}

func newFake(t *testing.T) (*fakeVLLM, *httptest.Server) {
	f := &fakeVLLM{blockSize: 16, cached: map[string]bool{}, cachedField: true}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model","owned_by":"vllm","max_model_len":65536}]}`)
	case "/metrics":
		if f.noMetrics {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		fmt.Fprintf(w, "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{engine=\"0\",model_name=\"fake-model\"} %g\n", f.qs)
		fmt.Fprintf(w, "# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{engine=\"0\",model_name=\"fake-model\"} %g\n", f.hits)
		if f.lagStep > 0 {
			fmt.Fprintf(w, "# TYPE kvtier_sim_lag_seconds gauge\nkvtier_sim_lag_seconds{model_name=\"fake-model\"} %g\n", f.lag)
		}
		if f.gpuBlocks > 0 {
			fmt.Fprintf(w, "# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"%d\",num_gpu_blocks=\"%d\"} 1.0\n", f.blockSize, f.gpuBlocks)
		}
	case "/v1/completions":
		f.complete(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeVLLM) complete(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, body)
	f.ids = append(f.ids, r.Header.Get("X-Request-Id"))
	fail := f.failNext
	f.failNext = nil
	f.mu.Unlock()
	if fail != nil && fail(w) {
		return
	}
	if _, ok := body["cache_salt"]; ok && f.noSalt {
		w.WriteHeader(400)
		fmt.Fprint(w, `{"error":{"message":"cache_salt is not supported","type":"BadRequestError","code":400}}`)
		return
	}
	prompt, _ := body["prompt"].([]any)
	key := fmt.Sprint(body["cache_salt"], prompt)
	l := len(prompt)
	f.mu.Lock()
	hit := 0
	if f.cached[key] {
		hit = (l - 1) / f.blockSize * f.blockSize
	}
	f.cached[key] = true
	f.lag += f.lagStep
	f.qs += float64(l)
	f.hits += float64(hit)
	f.mu.Unlock()
	if body["stream"] != true {
		fmt.Fprintf(w, `{"id":"cmpl-x","object":"text_completion","choices":[{"index":0,"text":"a","finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`, l, l+1)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"id\":\"cmpl-x\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":null}]}\n\n")
	w.(http.Flusher).Flush()
	fmt.Fprintf(w, "data: {\"id\":\"cmpl-x\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\n")
	details := ""
	if f.lieCached > 0 {
		hit = f.lieCached
	}
	if f.cachedField {
		details = fmt.Sprintf(`,"prompt_tokens_details":{"cached_tokens":%d}`, hit)
	}
	out := 2
	if f.lieOutput > 0 {
		out = f.lieOutput
	}
	fmt.Fprintf(w, "data: {\"id\":\"cmpl-x\",\"object\":\"text_completion\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d%s}}\n\n", l, out, l+out, details)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// streamPrefix writes the headers and one choice chunk of a stream.
func streamPrefix(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\"}]}\n\n")
	w.(http.Flusher).Flush()
}

func TestFakeSpeaksVLLM(t *testing.T) {
	// The fake is used by other tests; check it caches as intended.
	_, srv := newFake(t)
	c, err := serving.NewClient(srv.URL+"/v1/", 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Base != srv.URL {
		t.Fatalf("base = %q, want %q", c.Base, srv.URL)
	}
	req := serving.Request{Model: "fake-model", Prompt: make([]int, 100), MaxTokens: 2, Salt: "s"}
	for i, want := range []int{0, 96} {
		s, err := c.Stream(t.Context(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := s.Usage.CachedTokens(); n != want {
			t.Errorf("request %d: cached %d, want %d", i, n, want)
		}
	}
	if strings.Contains(fmt.Sprint(c.SaltSupported()), "-") {
		t.Error("salt refused by a server that takes it")
	}
}
