package serving

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/serving/servingtest"
)

func newOllama(t *testing.T, f *servingtest.Ollama) *Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A server that takes no token ids gets text of the same length, sized
// by a calibration; it is asked with ids only once.
func TestPromptFormFallsBackToText(t *testing.T) {
	t.Parallel()
	f := &servingtest.Ollama{}
	c := newOllama(t, f)
	var refused int32
	for i, l := range []int{300, 1000} {
		req := Request{Model: "tiny:latest", Prompt: TokenIDs(1, uint64(i), l), MaxTokens: 2, Salt: "s"}
		s, err := c.Stream(t.Context(), req, nil)
		if err != nil {
			t.Fatalf("L=%d: %v", l, err)
		}
		if s.Form != FormText || s.Tokens() != 2 || s.Usage == nil {
			t.Fatalf("L=%d: form %q, %d tokens, usage %v", l, s.Form, s.Tokens(), s.Usage)
		}
		if err := s.PromptCheck(); err != nil {
			t.Errorf("L=%d: %v", l, err)
		}
		if i == 0 {
			refused = f.Refused.Load()
		}
	}
	if f.Refused.Load() != refused || c.PromptForm() != FormText {
		t.Errorf("ids refused %d times, form %s: want the first request only, then text", f.Refused.Load(), c.PromptForm())
	}
}

// Two prompts sharing a prefix of ids share a prefix of text.
func TestSpellSharesPrefixes(t *testing.T) {
	t.Parallel()
	c := newOllama(t, &servingtest.Ollama{})
	a := TokenIDs(3, 1, 400)
	b := append(append([]int{}, a[:200]...), TokenIDs(3, 2, 200)...)
	ta, err := c.Spell(t.Context(), "m", APICompletions, a, 400)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := c.Spell(t.Context(), "m", APICompletions, b, 400)
	common := 0
	for common < min(len(ta), len(tb)) && ta[common] == tb[common] {
		common++
	}
	if common < len(ta)/3 || ta == tb {
		t.Errorf("texts share %d of %d bytes", common, len(ta))
	}
}

// A prompt the server cut to its context is an error naming the cut.
func TestCheckPromptCut(t *testing.T) {
	t.Parallel()
	c := newOllama(t, &servingtest.Ollama{Ctx: 1024})
	s, err := c.Stream(t.Context(), Request{Model: "m", Prompt: TokenIDs(1, 9, 1057), MaxTokens: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PromptCheck(); err == nil || !strings.Contains(err.Error(), "1024 prompt tokens for a prompt of 1057: it cut") {
		t.Errorf("err = %v", err)
	}
	for _, tt := range []struct{ sent, got, over int }{{2048, 2057, 0}, {100, 108, 0}, {8000, 8080, 0}, {100, 114, 6}} {
		if err := CheckPrompt(tt.sent, tt.got, tt.over); err != nil {
			t.Errorf("CheckPrompt(%d, %d, %d) = %v", tt.sent, tt.got, tt.over, err)
		}
	}
	if CheckPrompt(100, 109, 0) == nil || CheckPrompt(100, 91, 0) == nil {
		t.Error("a prompt off by 9 tokens of 100 passed")
	}
}

// Several served models and none named: an error naming them, not the
// first taken silently; a server's message with line breaks is one line.
func TestServedModelSeveralAndOneLine(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"a"},{"id":"b"}]}`)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"Traceback:\n  line 1\r\n  boom"}}`)
	}))
	t.Cleanup(srv.Close)
	c, _ := NewClient(srv.URL, 0)
	if _, err := c.ServedModel(t.Context(), ""); err == nil || !strings.Contains(err.Error(), "serves 2 models (a, b): name the one") {
		t.Errorf("ServedModel: %v", err)
	}
	if m, err := c.ServedModel(t.Context(), "b"); err != nil || m.ID != "b" {
		t.Errorf("ServedModel(b) = %v, %v", m, err)
	}
	_, err := c.Stream(t.Context(), Request{Model: "a", Prompt: []int{1, 2}, MaxTokens: 1}, nil)
	if err == nil || strings.ContainsAny(err.Error(), "\r\n") || !strings.Contains(err.Error(), "Traceback: line 1 boom") {
		t.Errorf("err = %q", err)
	}
}
