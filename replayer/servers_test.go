package replayer

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/serving/servingtest"
	"github.com/kvtier/kvtier/workload"
)

// A server that takes only text prompts and sends an all-zero usage on
// every chunk (Ollama) is replayed with default settings: prompts go as
// text of the trace's length, tokens are counted by chunks, and a prompt
// the server cut to its context is an error row saying so, on either
// API.
func TestReplayTextOnlyServer(t *testing.T) {
	t.Parallel()
	w := writeTrace(t, workload.Options{BlockTokens: 16},
		mooncake(0, 200, 3, "a", "1,2"), mooncake(1, 300, 3, "a", "1,2,3"), mooncake(2, 1057, 2, "b", "9"))
	for _, api := range []string{serving.APICompletions, serving.APIChat} {
		srv := httptest.NewServer(&servingtest.Ollama{Ctx: 1024})
		defer srv.Close()
		_, rows, err := run(t, srv.URL, nil, w, Config{API: api, BlockSize: 16})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 {
			t.Fatalf("%s: %d rows", api, len(rows))
		}
		for _, r := range rows[:2] {
			want := map[string]string{serving.APICompletions: serving.FormText, serving.APIChat: serving.FormChat}[api]
			if r.Status != results.StatusOK || r.Get("prompt_form") != want || r.Get("output_tokens") != "3" || r.Get("token_counting") != serving.CountChunks {
				t.Errorf("%s: request %s: %s %q %v", api, r.Get("request_index"), r.Status, r.Reason, r.Extra)
			}
		}
		if cut := rows[2]; cut.Status != results.StatusError || !strings.Contains(cut.Reason, "it cut the prompt") {
			t.Errorf("%s: a prompt cut to the context: %s %q", api, cut.Status, cut.Reason)
		}
	}
}

// Against a server of another family the replay names it in every row,
// assumes no vLLM block and reads its own cache report: llama.cpp's
// timings.cache_n realizes the trace's shared prefix.
func TestReplayServerFamilies(t *testing.T) {
	t.Parallel()
	// The second request 300 ms after the first, so the first has
	// finished (and filled the cache) on a loaded race run.
	w := writeTrace(t, workload.Options{BlockTokens: 16}, mooncake(0, 64, 2, "a", "1,2,3,4"), mooncake(300, 64, 2, "a", "1,2,3,4"))
	for _, tc := range []struct {
		h      http.Handler
		family string
		block  string
		cached string // the second request's cached_source
	}{
		{&servingtest.Ollama{}, serving.FamilyOllama, "not applicable", ""},
		{&servingtest.Server{Family: servingtest.LlamaCpp}, serving.FamilyLlamaCpp, "not applicable", serving.CachedFromTimings},
		{&servingtest.Server{Family: servingtest.TGI}, serving.FamilyTGI, "unknown", ""},
	} {
		srv := httptest.NewServer(tc.h)
		defer srv.Close()
		sum, rows, err := run(t, srv.URL, nil, w, Config{})
		if err != nil {
			t.Fatalf("%s: %v", tc.family, err)
		}
		if !strings.HasPrefix(sum.Info.BlockSource, tc.block) || sum.Row("replay").Get("server_family") != tc.family {
			t.Errorf("%s: block %d %q, run row family %q", tc.family, sum.Info.BlockSize, sum.Info.BlockSource, sum.Row("replay").Get("server_family"))
		}
		for _, r := range rows {
			if r.Status != results.StatusOK || r.Get("server_family") != tc.family {
				t.Errorf("%s: request %s: %s %q, family %q", tc.family, r.Get("request_index"), r.Status, r.Reason, r.Get("server_family"))
			}
		}
		if got := rows[1].Get("cached_source"); got != tc.cached || (got != "" && rows[1].Float("cached_tokens") < 64) {
			t.Errorf("%s: second request cached %q from %q, want 64 from %q", tc.family, rows[1].Get("cached_tokens"), got, tc.cached)
		}
	}
}

// With the server's log (Ollama with OLLAMA_DEBUG=1) the replay counts
// each request's cached tokens from its cache line: the repeated prompt
// reuses all but its last token, and the run's cached share says so.
func TestReplayCachedFromServerLog(t *testing.T) {
	t.Parallel()
	// 300 ms apart: one after the other (two of one length at once
	// whose lines disagree are left uncounted: TestServerLogClaim).
	w := writeTrace(t, workload.Options{BlockTokens: 16}, mooncake(0, 64, 2, "a", "1,2,3,4"), mooncake(300, 64, 2, "a", "1,2,3,4"))
	path := filepath.Join(t.TempDir(), "ollama.log")
	logf, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	srv := httptest.NewServer(&servingtest.Ollama{Log: logf})
	defer srv.Close()
	log, err := serving.OpenServerLog(path)
	if err != nil {
		t.Fatal(err)
	}
	sum, rows, err := run(t, srv.URL, nil, w, Config{ServerLog: log})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"0", fmt.Sprint(rows[1].Float("prompt_tokens") - 1)} {
		if r := rows[i]; r.Get("cached_tokens") != want || r.Get("cached_source") != serving.SourceServerLog {
			t.Errorf("request %d: cached %q from %q, want %s from the server log (%s)", i, r.Get("cached_tokens"), r.Get("cached_source"), want, r.Reason)
		}
	}
	if sum.CachedShare <= 0.4 {
		t.Errorf("cached share %g, want the second request's", sum.CachedShare)
	}
	// Ollama's own words: no vLLM metric, no 404.
	for _, said := range []string{sum.Info.GPUSource, sum.APCSource} {
		if !strings.Contains(said, "Ollama") || strings.Contains(strings.ToLower(said), "vllm") || strings.Contains(said, "404") {
			t.Errorf("said of Ollama: %q", said)
		}
	}
}
