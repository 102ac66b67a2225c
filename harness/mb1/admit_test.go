package mb1

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/vllmsim"
)

// slotServer runs at most cap(slot) requests at once, the rest waiting
// for a slot as Ollama's do: a decode makes a token every 5.3 ms, a
// prefill (max_tokens 1) answers after 200 ms.
type slotServer struct {
	slots int
	slot  chan struct{} // made in the bubble
	// family: "ollama" answers GET /api/version and says nothing of its
	// slots; "llamacpp" answers GET /props with total_slots.
	family string
	// eosAfter ends every decode after that many tokens (0: at its
	// max_tokens).
	eosAfter int
	// stall makes the decodes send nothing while a prefill runs.
	stall bool
	// prefill is how long a prefill takes to answer (0: 200 ms).
	prefill time.Duration
	// cached, when set, is the cached_tokens a prefill's usage reports.
	cached int
	// instant makes the decodes stream every token at once, and sent
	// counts the decode chunks written.
	instant    bool
	sent       atomic.Int64
	prefilling atomic.Int32
}

func (s *slotServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/models":
		fmt.Fprintf(w, `{"data":[{"id":"m","max_model_len":4096,"owned_by":%q}]}`, map[string]string{"llamacpp": "llamacpp"}[s.family])
		return
	case r.URL.Path == "/api/version" && s.family == "ollama":
		fmt.Fprint(w, `{"version":"0.9.6"}`)
		return
	case r.URL.Path == "/props" && s.family == "llamacpp":
		fmt.Fprintf(w, `{"default_generation_settings":{},"total_slots":%d}`, cap(s.slot))
		return
	case r.URL.Path != "/v1/completions":
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
		// A decode stalled by it resumes once its token has gone.
		s.prefilling.Add(1)
		defer s.prefilling.Add(-1)
		time.Sleep(cmp.Or(s.prefill, 200*time.Millisecond))
		s.send(w, 1, len(body.Prompt))
		return
	}
	n := body.MaxTokens
	if s.eosAfter > 0 {
		n = min(n, s.eosAfter)
	}
	for range n {
		// 5.3 ms, so that no token comes at the instant the prefill is
		// sent (the waits of the bubble are whole milliseconds).
		if !s.instant {
			time.Sleep(5300 * time.Microsecond)
		}
		if s.stall && s.prefilling.Load() > 0 {
			for s.prefilling.Load() > 0 {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if r.Context().Err() != nil || s.send(w, 0, 0) != nil {
			return // the client went away
		}
		s.sent.Add(1)
	}
	s.send(w, n, len(body.Prompt))
}

// send writes one token's chunk, and with n > 0 the usage of a request
// of prompt tokens that made n and the end of the stream.
func (s *slotServer) send(w http.ResponseWriter, n, prompt int) error {
	if n == 1 || n == 0 {
		if _, err := fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"x\",\"token_ids\":[7]}]}\n\n"); err != nil {
			return err
		}
	}
	if n > 0 {
		details := ""
		if s.cached != 0 && prompt > 0 && n == 1 {
			details = fmt.Sprintf(`,"prompt_tokens_details":{"cached_tokens":%d}`, s.cached)
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d%s}}\n\ndata: [DONE]\n\n", prompt, n, details)
	}
	w.(http.Flusher).Flush()
	return nil
}

// runSlots runs MB1 with decodes against srv in a bubble, returning its
// rows and how long the run took on the bubble's clock.
func runSlots(t *testing.T, srv *slotServer, decode []int, reps int, log ...*serving.ServerLog) ([]results.Row, time.Duration) {
	t.Helper()
	return runArms(t, srv, nil, decode, reps, log...)
}

// runArms is runSlots with a control arm whose prefill goes to control
// (none where nil).
func runArms(t *testing.T, srv, control *slotServer, decode []int, reps int, log ...*serving.ServerLog) ([]results.Row, time.Duration) {
	t.Helper()
	var rows, toks resultstest.Sink
	var took time.Duration
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		urls := make([]string, 2)
		for i, s := range []*slotServer{srv, control} {
			if s == nil {
				continue
			}
			s.slot = make(chan struct{}, s.slots)
			var err error
			if urls[i], err = net.Serve(s, fmt.Sprint("slots", i)); err != nil {
				t.Fatal(err)
			}
		}
		// Decodes of 100k tokens would run 500 s.
		r, err := New(t.Context(), Config{Endpoint: urls[0], ControlEndpoint: urls[1], HTTP: net.Client(), Decode: decode, Prefill: []int{64}, Reps: reps,
			DecodeTokens: 100_000, InjectAfter: 300 * time.Millisecond, Timeout: 600 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if len(log) > 0 {
			r.cfg.ServerLog = log[0]
		}
		start := time.Now()
		if err := r.Run(t.Context(), &rows, &toks); err != nil {
			t.Fatal(err)
		}
		took = time.Since(start)
		net.Close()
		time.Sleep(time.Second)
	})
	return rows.Rows(), took
}

// cellRows returns the rows of D=d.
func cellRows(rows []results.Row, d int) []results.Row {
	var out []results.Row
	for _, r := range rows {
		if r.Get("decode_streams") == fmt.Sprint(d) {
			out = append(out, r)
		}
	}
	return out
}

// A server whose slots the decodes fill, saying nothing of how many it
// has (Ollama at its default of 2): D=1 measures; D=2's prefill is
// refused within a few times its TTFT alone, never after a decode ends
// (500 s), and D=3 is not tried.
func TestInterfereRefusesUnadmittedPrefill(t *testing.T) {
	t.Parallel()
	rows, took := runSlots(t, &slotServer{slots: 2, family: "ollama"}, []int{1, 2, 3}, 2)
	if took > 30*time.Second {
		t.Errorf("the run took %v: the decodes were let run to their end", took)
	}
	for _, r := range cellRows(rows, 1) {
		if r.Status != results.StatusOK {
			t.Fatalf("D=1 %s rep %d: %s %q", r.Get("arm"), r.Rep, r.Status, r.Reason)
		}
	}
	two := cellRows(rows, 2)
	if len(two) != 4 || two[0].Status != results.StatusError || !strings.Contains(two[0].Reason, ErrNotAdmitted.Error()) ||
		!strings.Contains(two[0].Reason, "OLLAMA_NUM_PARALLEL") {
		t.Fatalf("D=2: %v", two)
	}
	// Its baseline has no window; the second rep is not tried.
	for _, r := range two[1:] {
		if r.Status != results.StatusSkipped {
			t.Errorf("D=2 %s rep %d: %s %q", r.Get("arm"), r.Rep, r.Status, r.Reason)
		}
	}
	for _, r := range cellRows(rows, 3) {
		if r.Status != results.StatusSkipped || !strings.Contains(r.Reason, "not admitted beside D=2") {
			t.Errorf("D=3 %s: %s %q", r.Get("arm"), r.Status, r.Reason)
		}
	}
}

// A server that says how many sequences it runs (llama.cpp's /props
// total_slots) has a D that does not fit refused at start, sending
// nothing.
func TestInterfereRefusesOverSlotsAtStart(t *testing.T) {
	t.Parallel()
	rows, _ := runSlots(t, &slotServer{slots: 2, family: "llamacpp"}, []int{1, 2}, 1)
	if one := cellRows(rows, 1); len(one) != 2 || one[0].Status != results.StatusOK {
		t.Fatalf("D=1: %v", one)
	}
	for _, r := range cellRows(rows, 2) {
		if r.Status != results.StatusSkipped || !strings.Contains(r.Reason, "at most 2 (llama.cpp server: GET /props total_slots): raise --parallel") {
			t.Errorf("D=2 %s: %s %q", r.Get("arm"), r.Status, r.Reason)
		}
	}
}

// A prefill that answers only after a decode ended (at end-of-sequence)
// is never ok: it may have waited for that decode's slot.
func TestInterfereRefusesPrefillAfterDecodeEnded(t *testing.T) {
	t.Parallel()
	rows, _ := runSlots(t, &slotServer{slots: 2, family: "ollama", eosAfter: 100}, []int{2}, 1)
	in := rows[0]
	if in.Status == results.StatusOK || !strings.Contains(in.Reason, "ended at") {
		t.Errorf("interfere row: %s %q", in.Status, in.Reason)
	}
}

// Each arm says what happened in it: a decode that ends before the
// control arm's prefill (on the control instance, beside no decode)
// answers leaves that arm without a figure, but no prefill of its waited
// for a slot; the interfere arm, whose prefill answered before any
// decode ended, is ok.
func TestInterfereControlArmReason(t *testing.T) {
	t.Parallel()
	rows, _ := runArms(t, &slotServer{slots: 3, family: "ollama", eosAfter: 150},
		&slotServer{slots: 1, family: "ollama", prefill: time.Second}, []int{2}, 1)
	byArm := map[string]results.Row{}
	for _, r := range rows {
		byArm[r.Get("arm")] = r
	}
	if in := byArm[ArmInterfere]; in.Status != results.StatusOK {
		t.Errorf("interfere row: %s %q", in.Status, in.Reason)
	}
	c := byArm[ArmControl]
	if c.Status != results.StatusError || !strings.Contains(c.Reason, "before the control prefill's first token") ||
		!strings.Contains(c.Reason, "control instance") || strings.Contains(c.Reason, "slot") || strings.Contains(c.Reason, ErrNotAdmitted.Error()) {
		t.Errorf("control row: %s %q", c.Status, c.Reason)
	}
}

// Decodes that stall for the whole prefill give the penalty as a lower
// bound, marked, never an ok row without it.
func TestInterfereStalledDecodesBoundPenalty(t *testing.T) {
	t.Parallel()
	rows, _ := runSlots(t, &slotServer{slots: 4, family: "ollama", stall: true}, []int{2}, 1)
	in := rows[0]
	if in.Status != results.StatusOK || in.Get(ColPenaltyBound) != BoundLower || in.Get("tokens_during") != "0" {
		t.Fatalf("interfere row: %s %q, bound %q, tokens during %s", in.Status, in.Reason, in.Get(ColPenaltyBound), in.Get("tokens_during"))
	}
	p, ttft, base := in.Float(results.ColPenalty), in.Float(results.ColPrefillTTFT), in.Float(results.ColBaseTPOT)
	if !(p > 1) || p != ttft/base || !strings.Contains(in.Reason, "lower bounds") {
		t.Errorf("penalty %g, want prefill TTFT %g ÷ base TPOT %g, noted (%q)", p, ttft, base, in.Reason)
	}
}

// Ollama's slots, which its API does not say, are read from its log
// (--server-log): a D that does not fit is refused at start, sending no
// request.
func TestInterfereReadsSlotsFromServerLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ollama.log")
	line := `time=2026-01-01T00:00:00.000Z level=INFO source=server.go:410 msg="starting llama server" cmd="/bin/ollama runner --model /m --ctx-size 16384 --batch-size 512 --verbose --threads 1 --no-mmap --parallel 2 --port 35921"` + "\n"
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := serving.OpenServerLog(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, took := runSlots(t, &slotServer{slots: 2, family: "ollama"}, []int{2}, 1, log)
	for _, r := range rows {
		if r.Status != results.StatusSkipped || !strings.Contains(r.Reason, "the server runs at most 2 (server log "+path+": --parallel 2): raise OLLAMA_NUM_PARALLEL") {
			t.Errorf("%s: %s %q", r.Get("arm"), r.Status, r.Reason)
		}
	}
	if took > time.Second {
		t.Errorf("refused after %v: requests were sent", took)
	}
}

// A prefill whose usage says more tokens were cached than it had is
// measured all the same: its server figure is impossible (said in
// server_check), not the row's error.
func TestInterfereImpossibleServerFigure(t *testing.T) {
	t.Parallel()
	rows, _ := runSlots(t, &slotServer{slots: 3, family: "ollama", eosAfter: 150, cached: 7265}, []int{1}, 1)
	in := rows[0]
	if in.Status != results.StatusOK || !(in.Float(results.ColPrefillTTFT) > 0) {
		t.Fatalf("interfere row: %s %q, prefill TTFT %q", in.Status, in.Reason, in.Get(results.ColPrefillTTFT))
	}
	if got := in.Get(results.ColServerCheck); !strings.HasPrefix(got, "impossible: ") || !strings.Contains(got, "7265 above the prompt") {
		t.Errorf("server_check %q", got)
	}
}

// Decodes that stream faster than any decode (a server that sends its
// whole max_tokens at once) are cut at kvtier's budget, the row saying
// so, instead of writing every chunk up to the context length into
// mb1_tokens.csv.
func TestInterfereCutsInstantDecodes(t *testing.T) {
	t.Parallel()
	srv := &slotServer{slots: 4, family: "ollama", instant: true}
	rows, _ := runSlots(t, srv, []int{2}, 1)
	if n := srv.sent.Load(); n > 2*(maxBurstChunks+1024) {
		t.Errorf("the server sent %d decode chunks: the decodes were not cut", n)
	}
	in := rows[0]
	if in.Status != results.StatusError || !strings.Contains(in.Reason, "faster than any decode") {
		t.Errorf("interfere row: %s %q", in.Status, in.Reason)
	}
}
