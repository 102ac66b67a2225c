package probe

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvtier/kvtier/serving/servingtest"
)

// counting serves h and counts the GET /metrics it answers.
func counting(t *testing.T, h http.Handler, metrics *atomic.Int32) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			metrics.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Against Ollama the probe names the family, warns of no vLLM release,
// asks /metrics once (404) and says a block does not apply.
func TestProbeOllamaNoVLLMAssumptions(t *testing.T) {
	t.Parallel()
	var metrics atomic.Int32
	cfg := testConfig(counting(t, &servingtest.Ollama{}, &metrics))
	cfg.Reps = 1
	p := mustNew(t, cfg)
	info := p.Info()
	if info.Family.Name != "ollama" || info.VersionError != "" || !strings.HasPrefix(info.BlockSource, "not applicable") {
		t.Errorf("family %v, version error %q, block %d %q", info.Family, info.VersionError, info.BlockSize, info.BlockSource)
	}
	sink := mustRun(t, p)
	for _, r := range sink.Rows() {
		if r.Get("server_family") != "ollama" || r.Get("prompt_form") != "text" {
			t.Errorf("row %s: server_family %q, prompt_form %q (%s)", r.Tier, r.Get("server_family"), r.Get("prompt_form"), r.Reason)
		}
	}
	if metrics.Load() != 1 {
		t.Errorf("GET /metrics asked %d times against a server without it, want 1", metrics.Load())
	}
}

// Without /metrics, llama.cpp's timings.cache_n verifies a GPU hit.
func TestProbeLlamaCppVerifiedByCacheN(t *testing.T) {
	t.Parallel()
	var metrics atomic.Int32
	cfg := testConfig(counting(t, &servingtest.Server{Family: servingtest.LlamaCpp}, &metrics))
	cfg.Reps = 1
	sink := mustRun(t, mustNew(t, cfg))
	for _, r := range sink.Rows() {
		if r.Get("verified") != "true" || r.Get("cached_source") != "timings.cache_n" || r.Get("server_family") != "llamacpp" {
			t.Errorf("%s row: verified %q by %q (%s), cached %q from %q", r.Tier, r.Get("verified"), r.Get("verified_by"), r.Get("verify_reason"), r.Get("cached_tokens"), r.Get("cached_source"))
		}
	}
}
