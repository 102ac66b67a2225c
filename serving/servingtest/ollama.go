// Package servingtest holds fake LLM servers for tests, each speaking
// one server family's wire format as its source writes it
// (docs/servers.md).
package servingtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Ollama speaks Ollama 0.6.8's OpenAI-compatible API as its source
// (openai/openai.go) writes it: a completions prompt must be a string
// (400 "invalid prompt" otherwise), every streamed chunk carries an
// all-zero usage, the last choice chunk has empty text and the
// finish_reason, and with include_usage a usage chunk follows. Its
// tokenizer counts one token per word, two for words after "h", plus a
// BOS; it has no /tokenize, /health, /metrics or /version (404), but
// /api/version.
type Ollama struct {
	Refused atomic.Int32 // prompts of token ids refused
	Ctx     int          // num_ctx: longer prompts are cut to it; 0 none
	// Log, when set, gets the cache line Ollama's runner logs with
	// OLLAMA_DEBUG=1 as each request takes a slot: a prompt sent before
	// reuses all but its last token, any other none.
	Log  io.Writer
	mu   sync.Mutex
	seen map[string]bool
}

// logLoad writes the cache line of a request of text, pt tokens.
func (f *Ollama) logLoad(text string, pt int) {
	if f.Log == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	used := 0
	if f.seen[text] {
		used = pt - 1
	}
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	f.seen[text] = true
	fmt.Fprintf(f.Log, "time=2026-01-01T00:00:00.000Z level=DEBUG source=cache.go:104 msg=\"loading cache slot\" id=0 cache=%d prompt=%d used=%d remaining=%d\n", used, pt, used, pt-used)
}

// Tokens is the prompt tokens the fake counts for text.
func (f *Ollama) Tokens(text string) int {
	n := 1 // BOS
	for _, w := range strings.Fields(text) {
		n++
		if w > "h" {
			n++
		}
	}
	if f.Ctx > 0 {
		n = min(n, f.Ctx)
	}
	return n
}

// ServeHTTP answers as Ollama does.
func (f *Ollama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"tiny:latest","object":"model","created":1,"owned_by":"library"}]}`)
	case "/api/version":
		fmt.Fprint(w, `{"version":"0.6.8"}`)
	case "/v1/completions", "/v1/chat/completions":
		f.complete(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *Ollama) complete(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt   any  `json:"prompt"`
		Stream   bool `json:"stream"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		MaxTokens int `json:"max_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	text, ok := req.Prompt.(string)
	if r.URL.Path == "/v1/chat/completions" && len(req.Messages) > 0 {
		text, ok = req.Messages[0].Content, true
	}
	if !ok {
		f.Refused.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"invalid prompt","type":"invalid_request_error","param":null,"code":null}}`)
		return
	}
	pt := f.Tokens(text)
	if r.URL.Path == "/v1/chat/completions" {
		pt += 6 // the template's tokens
		if f.Ctx > 0 {
			pt = min(pt, f.Ctx)
		}
	}
	f.logLoad(text, pt)
	n := max(req.MaxTokens, 1)
	if !req.Stream {
		fmt.Fprintf(w, `{"choices":[{"text":"x","finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, pt, n, pt+n)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	zero := `"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`
	for range n {
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":null}],%s}\n\n", zero)
	}
	fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}],%s}\n\n", zero)
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", pt, n, pt+n)
	fmt.Fprint(w, "data: [DONE]\n\n")
}
