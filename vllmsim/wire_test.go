package vllmsim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// topKeys returns the keys of the JSON object body in the order they
// are written.
func topKeys(t *testing.T, body []byte) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(body))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", body)
	}
	var keys []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestResponseKeyOrder checks that completion and chat bodies, streamed
// or not, open with vLLM's id, object, created, model in that order, and
// name the object as vLLM does.
func TestResponseKeyOrder(t *testing.T) {
	t.Parallel()
	_, url := newTestServer(t, Config{TimeScale: 0})
	head := []string{"id", "object", "created", "model"}
	tests := []struct {
		path, body, object string
		stream             bool
	}{
		{"/v1/completions", `{"prompt": "a b c", "max_tokens": 2}`, "text_completion", false},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "a b c"}], "max_tokens": 2}`, "chat.completion", false},
		{"/v1/completions", `{"prompt": "a b c", "max_tokens": 2, "stream": true, "stream_options": {"include_usage": true}}`, "text_completion", true},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "a b c"}], "max_tokens": 2, "stream": true, "stream_options": {"include_usage": true}}`, "chat.completion.chunk", true},
	}
	for _, tt := range tests {
		raw := postRaw(t, http.DefaultClient, url, tt.path, tt.body)
		bodies := []string{raw}
		if tt.stream {
			bodies = nil
			for line := range strings.SplitSeq(raw, "\n") {
				if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
					bodies = append(bodies, data)
				}
			}
			if len(bodies) < 2 {
				t.Fatalf("%s: %d chunks in %q", tt.path, len(bodies), raw)
			}
		}
		for _, b := range bodies {
			keys := topKeys(t, []byte(b))
			if len(keys) < len(head) || !slices.Equal(keys[:len(head)], head) || !slices.Contains(keys, "choices") {
				t.Errorf("%s stream=%v: keys %v, want %v first, then choices", tt.path, tt.stream, keys, head)
			}
			var v struct{ Object string }
			if err := json.Unmarshal([]byte(b), &v); err != nil || v.Object != tt.object {
				t.Errorf("%s stream=%v: object %q, want %q", tt.path, tt.stream, v.Object, tt.object)
			}
		}
	}
}
