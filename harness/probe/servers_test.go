package probe

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvtier/kvtier/serving"
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

// Ollama reports no cached tokens: without its log the probe's rows say
// so in Ollama's words (not vLLM's /metrics 404); with --server-log its
// cache lines verify the miss and the hit, with the count the log gives.
func TestProbeOllamaVerifiedByServerLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ollama.log")
	logf, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	var metrics atomic.Int32
	url := counting(t, &servingtest.Ollama{Log: logf}, &metrics)
	cfg := testConfig(url)
	cfg.Reps = 1
	for _, r := range mustRun(t, mustNew(t, cfg)).Rows() {
		if why := r.Get("verify_reason"); r.Get("verified") != "false" || !strings.Contains(why, "Ollama reports no cached tokens") ||
			!strings.Contains(why, "OLLAMA_DEBUG=1") || strings.Contains(why, "404") {
			t.Errorf("%s without the log: verified %s, %q", r.Tier, r.Get("verified"), why)
		}
	}
	if cfg.ServerLog, err = serving.OpenServerLog(path); err != nil {
		t.Fatal(err)
	}
	cfg.Nonce++ // prompts of their own
	for _, r := range mustRun(t, mustNew(t, cfg)).Rows() {
		want := map[string]string{"miss": "0", "gpu": fmt.Sprint(r.Float("prompt_tokens") - 1)}[r.Tier]
		if r.Get("verified") != "true" || r.Get("verified_by") != serving.SourceServerLog || r.Get("cached_tokens") != want ||
			r.Get("cached_source") != serving.SourceServerLog {
			t.Errorf("%s with the log: verified %s by %q, cached %s (want %s) from %q: %s", r.Tier, r.Get("verified"), r.Get("verified_by"),
				r.Get("cached_tokens"), want, r.Get("cached_source"), r.Get("verify_reason"))
		}
	}
}

// A miss on a cache that reuses token by token (grain 1: Ollama,
// llama.cpp) shares a few leading tokens with earlier prompts and is
// still a miss; a tenth of the prompt cached is not.
func TestVerifyMissTokenGrain(t *testing.T) {
	t.Parallel()
	metrics := errors.New("no /metrics")
	for _, tt := range []struct {
		cached int
		ok     bool
	}{{0, true}, {3, true}, {102, true}, {103, false}, {1023, false}} {
		v := Verify(Check{Tier: "miss", L: 1030, Grain: 1}, serving.Delta{}, metrics, loggedCache(tt.cached))
		if v.OK != tt.ok || (v.OK && v.By != serving.SourceServerLog) {
			t.Errorf("%d of 1030 cached: %+v, want ok %v", tt.cached, v, tt.ok)
		}
	}
}
