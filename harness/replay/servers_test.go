package replay

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/harness/trace"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/serving/servingtest"
)

// A server that takes only text prompts and sends an all-zero usage on
// every chunk (Ollama) is replayed with default settings: prompts go as
// text of the trace's length, tokens are counted by chunks, and a prompt
// the server cut to its context is an error row saying so, on either
// API.
func TestReplayTextOnlyServer(t *testing.T) {
	t.Parallel()
	w := writeTrace(t, trace.Options{BlockTokens: 16},
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
