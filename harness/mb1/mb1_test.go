package mb1

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/serving"
)

// ones turns token times into chunks of one token each.
func ones(ts []float64) []arrival {
	out := make([]arrival, len(ts))
	for i, t := range ts {
		out[i] = arrival{t, 1}
	}
	return out
}

func TestCompute(t *testing.T) {
	t.Parallel()
	// One stream: a token every 10 ms until 1.0 s, then nothing until 1.5
	// s (the prefill), then every 10 ms again. Warm-up 2.
	var ts []float64
	for t := 0.0; t < 1.0; t += 0.01 {
		ts = append(ts, t)
	}
	ts = append(ts, 1.5, 1.51, 1.52)
	st := compute([][]arrival{ones(ts)}, 2, 1.0, 0.5)
	if math.Abs(st.baseTPOT-0.01) > 1e-9 {
		t.Errorf("base TPOT %g", st.baseTPOT)
	}
	if st.tokensDuring != 1 || st.effTPOT != 0.5 {
		t.Errorf("during %g eff %g", st.tokensDuring, st.effTPOT)
	}
	if math.Abs(st.itlP90During-0.51) > 1e-3 || math.Abs(st.itlP50-0.01) > 1e-9 {
		t.Errorf("itl during p90 %g base p50 %g", st.itlP90During, st.itlP50)
	}
	// The same tokens two to a chunk count the same.
	var pairs []arrival
	for i := 0; i+1 < len(ts); i += 2 {
		pairs = append(pairs, arrival{ts[i+1], 2})
	}
	if b := compute([][]arrival{pairs}, 2, 1.0, 0.515); b.tokensDuring != 2 || math.Abs(b.baseTPOT-0.01)/0.01 > 0.05 {
		t.Errorf("pairs: during %g base %g", b.tokensDuring, b.baseTPOT)
	}
	// Nothing during: unbounded, not a number.
	st = compute([][]arrival{ones(ts[:50])}, 2, 1.0, 0.5)
	if !math.IsNaN(st.effTPOT) {
		t.Errorf("no tokens during gave eff %g", st.effTPOT)
	}
}

func TestValidateAndUnreachable(t *testing.T) {
	t.Parallel()
	err := Config{Decode: []int{0}, Reps: 0, API: "grpc"}.Validate()
	want := []string{"base-url", "decode", "prefill", "reps", "inject-after", "timeout", "api"}
	if got := option.Fields(err); !slices.Equal(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	for _, want := range []string{"decode: want 1 to 4096, got 0 (streams)", "prefill: empty", `api: "grpc"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %s", err, want)
		}
	}
	_, err = New(context.Background(), Config{Endpoint: "http://127.0.0.1:1", Decode: []int{1}, Prefill: []int{16},
		Reps: 1, InjectAfter: time.Second, Timeout: time.Second})
	if !errors.Is(err, serving.ErrUnreachable) {
		t.Errorf("err = %v, want ErrUnreachable", err)
	}
}

// TestDecodeStall: a server whose decode streams stop after a few tokens
// and hang gives an error row naming the problem, within the timeout.
func TestDecodeStall(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"data":[{"id":"m","max_model_len":4096}]}`)
		case "/v1/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			for range 3 {
				fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n")
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	r, err := New(t.Context(), Config{Endpoint: srv.URL, Decode: []int{2}, Prefill: []int{64}, Reps: 1,
		InjectAfter: 10 * time.Millisecond, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var rows, toks resultstest.Sink
	if err := r.Run(t.Context(), &rows, &toks); err != nil {
		t.Fatal(err)
	}
	if rows.Len() != 2 {
		t.Fatalf("%d rows", rows.Len())
	}
	if r := rows.Rows()[0]; r.Status != results.StatusError || !strings.Contains(r.Reason, "did not reach 40 tokens") && !strings.Contains(r.Reason, "no data for 200ms (idle timeout)") {
		t.Errorf("interfere row: %s %q", r.Status, r.Reason)
	}
	if r := rows.Rows()[1]; r.Status != results.StatusSkipped || !strings.Contains(r.Reason, "no window") {
		t.Errorf("baseline row: %s %q", r.Status, r.Reason)
	}
	if toks.Len() != 6 {
		t.Errorf("%d token rows, want the 6 that arrived", toks.Len())
	}
}
