package mb1

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/vllmsim"
)

// bundler is a fake vLLM whose decode streams make a token every 5 ms,
// one every 100 ms while a prefill runs (its 500 ms TTFT), and deliver
// them one per chunk or bundled: several per chunk in steady decode,
// and (burst) all those made during the prefill's first 30 ms, its front
// end, in one chunk, as vLLM's output collector merges what a busy stream
// has not taken yet. It reports tokens by continuous usage, by token ids, or not
// at all.
type bundler struct {
	steady       int  // tokens per chunk in steady decode (0 = 1)
	burst        bool // hold the tokens made during a prefill's front end
	usage, ids   bool
	mu           sync.Mutex
	prefillStart time.Time
}

const (
	bundleStep    = 5 * time.Millisecond
	bundleStall   = 100 * time.Millisecond
	bundleFront   = 30 * time.Millisecond
	bundlePrefill = 500 * time.Millisecond
)

func (b *bundler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"data":[{"id":"m","max_model_len":100000}]}`)
		return
	case "/v1/completions":
	default:
		http.NotFound(w, r)
		return
	}
	var body struct {
		MaxTokens int   `json:"max_tokens"`
		Prompt    []int `json:"prompt"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	w.Header().Set("Content-Type", "text/event-stream")
	if body.MaxTokens == 1 {
		b.mu.Lock()
		b.prefillStart = time.Now()
		b.mu.Unlock()
		time.Sleep(bundlePrefill)
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", len(body.Prompt))
		return
	}
	b.decode(w, r)
}

// phase says whether now falls in the front end of a prefill (tokens are
// held) and how long until the next token.
func (b *bundler) phase(now time.Time) (hold bool, step time.Duration) {
	b.mu.Lock()
	start := b.prefillStart
	b.mu.Unlock()
	switch since := now.Sub(start); {
	case start.IsZero() || since >= bundlePrefill:
		return false, bundleStep
	case since < bundleFront:
		return true, bundleStep
	}
	return false, bundleStall
}

func (b *bundler) decode(w http.ResponseWriter, r *http.Request) {
	fl := w.(http.Flusher)
	total, pending := 0, 0
	for r.Context().Err() == nil {
		_, step := b.phase(time.Now())
		time.Sleep(step)
		total++
		pending++
		hold, next := b.phase(time.Now())
		if (hold && b.burst) || (pending < b.steady && next == bundleStep) {
			continue
		}
		chunk := map[string]any{"choices": []map[string]any{{"index": 0, "text": strings.Repeat(" x", pending)}}}
		if b.usage {
			chunk["usage"] = map[string]int{"prompt_tokens": 9, "completion_tokens": total}
		}
		if b.ids {
			chunk["choices"].([]map[string]any)[0]["token_ids"] = make([]int, pending)
		}
		data, _ := json.Marshal(chunk)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return
		}
		fl.Flush()
		pending = 0
	}
}

// runBundler runs one MB1 cell (D=2) against a bundler in virtual time.
func runBundler(t *testing.T, b *bundler) (interfere, baseline results.Row) {
	t.Helper()
	var rows, toks resultstest.Sink
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		url, err := net.Serve(b, "fake")
		if err != nil {
			t.Fatal(err)
		}
		r, err := New(t.Context(), Config{Endpoint: url, HTTP: net.Client(), Decode: []int{2}, Prefill: []int{64}, Reps: 1,
			InjectAfter: time.Second, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Run(t.Context(), &rows, &toks); err != nil {
			t.Fatal(err)
		}
		net.Close()
		time.Sleep(time.Second) // the fake's handlers see their clients gone
	})
	if rows.Len() != 2 {
		t.Fatalf("%d rows", rows.Len())
	}
	return rows.Rows()[0], rows.Rows()[1]
}

// TestBundledChunksCountTheSame is issue 13's check: a server that
// bundles several tokens per chunk gives the same tokens during the
// prefill and the same penalty as one that sends one token per chunk,
// whether it reports tokens by continuous usage or by token ids; a server
// that reports neither is counted by chunks: a burst bundled during the
// prefill's front end is undercounted, the penalty inflated, and the row
// says how it counted.
func TestBundledChunksCountTheSame(t *testing.T) {
	single, _ := runBundler(t, &bundler{usage: true})
	if single.Get("token_counting") != serving.CountUsage {
		t.Fatalf("one per chunk: token_counting %q", single.Get("token_counting"))
	}
	want, pen := single.Float("tokens_per_stream_during"), single.Float("penalty")
	t.Logf("one token per chunk: %.1f tokens per stream during, penalty %.3g", want, pen)
	for _, tc := range []struct {
		name     string
		b        *bundler
		counting string
	}{
		{"bundled, continuous usage", &bundler{steady: 2, burst: true, usage: true}, serving.CountUsage},
		{"bundled, token ids", &bundler{steady: 3, burst: true, ids: true}, serving.CountTokenIDs},
	} {
		in, _ := runBundler(t, tc.b)
		got, gpen := in.Float("tokens_per_stream_during"), in.Float("penalty")
		t.Logf("%s: %.1f tokens per stream during, penalty %.3g", tc.name, got, gpen)
		if in.Get("token_counting") != tc.counting || math.Abs(got-want) > 1 || math.Abs(gpen/pen-1) > 0.1 {
			t.Errorf("%s: counting %q, %.1f tokens per stream during (one per chunk: %.1f), penalty %.3g (%.3g)", tc.name, in.Get("token_counting"), got, want, gpen, pen)
		}
	}
	in, _ := runBundler(t, &bundler{burst: true})
	got, gpen := in.Float("tokens_per_stream_during"), in.Float("penalty")
	t.Logf("burst bundled, no counts: %.1f tokens per stream during, penalty %.3g", got, gpen)
	if in.Get("token_counting") != serving.CountChunks || !strings.Contains(in.Reason, "counted by chunks") || got >= want-2 || gpen < 1.3*pen {
		t.Errorf("burst without counts: counting %q, %.1f tokens per stream during, penalty %.3g, reason %q: want chunks, fewer, inflated, and said", in.Get("token_counting"), got, gpen, in.Reason)
	}
}
