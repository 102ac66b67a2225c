package vllmsim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// FuzzTokenize: any body to POST /tokenize (prompts as text, token ids or
// lists; chat messages of any shape) is answered 200 or with a JSON error
// of status 4xx; nothing panics.
func FuzzTokenize(f *testing.F) {
	s, err := New(Config{GPUBlocks: 64, MaxModelLen: 4096, TimeScale: 0})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	for _, b := range []string{
		`{"prompt": "the of and"}`, `{"prompt": [1, 2, 3]}`, `{"prompt": [[1, 2]]}`, `{"prompt": [-1]}`,
		`{"messages": [{"role": "user", "content": "hi"}]}`, `{"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}`,
		`{"messages": [{"content": {"a": 1}}], "add_generation_prompt": false}`, `{"prompt": 1e400}`, `[`, ``,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/tokenize", bytes.NewReader(b)))
		if c := rec.Code; c != http.StatusOK && (c < 400 || c >= 500 || !bytes.Contains(rec.Body.Bytes(), []byte(`"error"`))) {
			t.Fatalf("HTTP %d: %s", c, rec.Body.Bytes())
		}
	})
}

// FuzzTokenIDs: the fast reader of a prompt's token ids takes only what
// encoding/json reads as a list of ints, and reads the same ids.
func FuzzTokenIDs(f *testing.F) {
	for _, b := range []string{
		`[1, 2, 3]`, ` [ 0 ,7 ] `, `[]`, `[1,]`, `[01]`, `[1 2]`, `[-1]`, `[1.5]`, `[1e3]`,
		`[1234567890]`, `[1]x`, `[[1]]`, `"text"`, "[\t1\n,\r2]",
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, ok := tokenIDs(b)
		if !ok {
			return
		}
		var want []int
		if err := json.Unmarshal(b, &want); err != nil || !slices.Equal(ids, want) || want == nil {
			t.Fatalf("%q: read %v, encoding/json %v (%v)", b, ids, want, err)
		}
	})
}
