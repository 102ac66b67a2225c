package mb1

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/vllmsim"
)

// serialServer serves one request at a time, as Ollama (whose
// GET /api/version it answers) does with one
// parallel slot: a decode stream makes its max_tokens (a token every
// 5 ms) before the next request starts; a prefill answers after 50 ms.
// It holds its one slot as a channel, which the test's bubble sees
// blocked on.
type serialServer struct{ slot chan struct{} }

func (s *serialServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"data":[{"id":"m","max_model_len":4096}]}`)
		return
	case "/api/version":
		fmt.Fprint(w, `{"version":"0.6.8"}`)
		return
	}
	if r.URL.Path != "/v1/completions" {
		http.NotFound(w, r)
		return
	}
	var body struct {
		MaxTokens int   `json:"max_tokens"`
		Prompt    []int `json:"prompt"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	select {
	case s.slot <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	defer func() { <-s.slot }()
	w.Header().Set("Content-Type", "text/event-stream")
	if body.MaxTokens == 1 {
		time.Sleep(50 * time.Millisecond)
	}
	for range body.MaxTokens {
		time.Sleep(5 * time.Millisecond)
		if _, err := fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"x\",\"token_ids\":[7]}]}\n\n"); err != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", len(body.Prompt), body.MaxTokens)
}

// A serializing server is an error row naming it, with one decode
// stream (the prefill answers after it ended) or several (one stream
// runs while the others receive nothing), never an ok row or a stream
// blamed.
func TestInterfereRefusesSerializingServer(t *testing.T) {
	t.Parallel()
	for _, d := range []int{1, 2} {
		var rows, toks resultstest.Sink
		synctest.Test(t, func(t *testing.T) {
			var net vllmsim.MemNet
			defer net.Close()
			url, err := net.Serve(&serialServer{slot: make(chan struct{}, 1)}, "serial")
			if err != nil {
				t.Fatal(err)
			}
			r, err := New(t.Context(), Config{Endpoint: url, HTTP: net.Client(), Decode: []int{d}, Prefill: []int{64}, Reps: 1,
				DecodeTokens: 200, InjectAfter: 100 * time.Millisecond, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Run(t.Context(), &rows, &toks); err != nil {
				t.Fatal(err)
			}
			net.Close()
			time.Sleep(time.Second)
		})
		in := rows.Rows()[0]
		// D=1: the prefill answered after the decode ended; D=2: one
		// stream ran while the other received nothing.
		want := map[int]string{1: ErrNotAdmitted.Error(), 2: "serializes requests"}[d]
		if in.Status != results.StatusError || !strings.Contains(in.Reason, want) || in.Get("server_family") != "ollama" {
			t.Errorf("D=%d: %s %q, server_family %q", d, in.Status, in.Reason, in.Get("server_family"))
		}
	}
}
