package workload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// checkTrace reads text as a trace and analyses it: whatever the input,
// nothing may panic, and every request handed out must be well formed.
func checkTrace(t *testing.T, text []byte, block int) {
	r, err := NewReader(bytes.NewReader(text), "fuzz", Options{BlockTokens: block, Reorder: 2})
	if err != nil {
		// A negative block size is refused; so is text that starts with
		// gzip's magic but holds no gzip header.
		if block < 0 || (bytes.HasPrefix(text, []byte{0x1f, 0x8b}) && strings.HasPrefix(err.Error(), "gzip: ")) {
			return
		}
		t.Fatal(err)
	}
	a, err := NewAnalyzer(AnalyzeOptions{BytesPerToken: 3, Windows: []float64{1}, Instances: []int{2}, Route: RouteHash})
	if err != nil {
		t.Fatal(err)
	}
	last := -1.0
	for i := 0; ; i++ {
		req, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error without a line number: %v", err)
			}
			return
		}
		b := req.BlockTokens
		switch {
		case req.Index != i || req.Time < last:
			t.Fatalf("request %d out of order: index %d time %g after %g", i, req.Index, req.Time, last)
		case req.Input < 1 || b < 1 || len(req.Hashes) > req.Blocks():
			t.Fatalf("request %+v: %d ids for %d blocks", req, len(req.Hashes), req.Blocks())
		case req.BlockTokensAt(req.Blocks()-1) < 1 || req.BlockTokensAt(req.Blocks()-1) > b:
			t.Fatalf("last block of %d tokens", req.BlockTokensAt(req.Blocks()-1))
		case req.Parent >= req.Index || req.Session < 0 || req.Session >= r.Stats().Sessions:
			t.Fatalf("request %+v: parent or session out of range", req)
		}
		last = req.Time
		if err := a.Add(req); err != nil {
			t.Fatal(err)
		}
	}
	st := r.Stats()
	if st.Requests > 0 {
		an := a.Finish(st.BlockTokens)
		if c := an.CeilingAny; c < 0 || c > 1 {
			t.Fatalf("ceiling %g", c)
		}
	}
}

func FuzzMooncakeTrace(f *testing.F) {
	f.Add([]byte(`{"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 3]}
{"timestamp": 10, "input_length": 600, "output_length": 5, "hash_ids": [1, 4], "session_id": 3, "turn": 2}
`), 0)
	f.Add([]byte(`{"timestamp": 5, "input_length": 40, "hash_ids": [1, 2, 3]}
{"timestamp": 1, "input_length": 10, "hash_ids": [-7]}
{"timestamp": 1e3, "input_length": 10, "hash_ids": []}`), 16)
	f.Fuzz(checkTrace)
}

func FuzzAlibabaTrace(f *testing.F) {
	f.Add([]byte(`{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 20, "output_length": 3, "type": "text", "turn": 1, "hash_ids": [1, 2]}
{"chat_id": 2, "parent_chat_id": 1, "timestamp": 0.7, "input_length": 40, "output_length": 3, "type": "text", "turn": 2, "hash_ids": [1, 2, 3]}
{"chat_id": "x", "parent_chat_id": "9", "session_id": 4, "timestamp": 0.6, "input_length": 16, "hash_ids": [8]}
`), 0)
	f.Add([]byte(`{"chat_id": 3, "parent_chat_id": 3, "timestamp": 1, "input_length": 17, "hash_ids": [1, 2]}`), 8)
	f.Fuzz(checkTrace)
}

// A window of lines that each carry many hash ids is bounded in memory:
// past the budget the reader stops with an error naming --reorder.
func TestWindowBounded(t *testing.T) {
	defer func(b int64) { windowBytes = b }(windowBytes)
	windowBytes = 1 << 20
	var b strings.Builder
	ids := strings.TrimSuffix(strings.Repeat("7,", 20000), ",")
	for i := range 100 {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 10240000, "output_length": 1, "hash_ids": [%s]}`+"\n", 100-i, ids)
	}
	r, err := NewReader(strings.NewReader(b.String()), "t", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = r.Next()
	}
	if err == io.EOF || !strings.Contains(err.Error(), "lower --reorder") {
		t.Fatalf("err %v, want the window's budget", err)
	}
}
