package mb1

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/vllmsim"
)

type memSink struct{ rows []results.Row }

func (m *memSink) Write(r results.Row) error { m.rows = append(m.rows, r); return nil }
func (m *memSink) Close() error              { return nil }

func startSim(t *testing.T, scale float64) string {
	t.Helper()
	s, err := vllmsim.New(vllmsim.Config{GPUBlocks: 4096, TimeScale: scale, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	url, err := s.Start(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// TestInterfereSim runs MB1 against two simulated H20 servers at half
// of real time: the prefill stalls decode on the same server, more the
// longer it is, and not at all when it goes to the other server.
func TestInterfereSim(t *testing.T) {
	const scale = 0.5
	cfg := Config{
		Endpoint: startSim(t, scale), ControlEndpoint: startSim(t, scale),
		Decode: []int{2}, Prefill: []int{1024, 4096}, Reps: 1,
		InjectAfter: 40 * time.Millisecond, Seed: 3, Timeout: 20 * time.Second,
		ChunkLabel: "8192",
	}
	r, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Simulated() {
		t.Error("the sim was not recognised as simulated")
	}
	var rows, toks memSink
	if err := r.Run(t.Context(), &rows, &toks); err != nil {
		t.Fatal(err)
	}
	if len(rows.rows) != 6 {
		t.Fatalf("%d rows, want 6 (2 cells × 3 arms)", len(rows.rows))
	}
	penalty := map[string][]float64{}
	for _, row := range rows.rows {
		arm := row.Get("arm")
		if row.Status != results.StatusOK {
			t.Fatalf("%s P=%s: %s %s", arm, row.Get("prefill_tokens"), row.Status, row.Reason)
		}
		p := row.Float("penalty")
		t.Logf("%-9s P=%-5s base %.3gms ttft %.3gms tokens/stream %.3g penalty %.3g benefit %.3gms",
			arm, row.Get("prefill_tokens"), 1e3*row.Float("base_tpot_s"), 1e3*row.Float("prefill_ttft_s"),
			row.Float("tokens_per_stream_during"), p, 1e3*row.Float("benefit_s"))
		penalty[arm] = append(penalty[arm], p)
		if row.Get("simulated") != "true" || row.Get("chunk_label") != "8192" {
			t.Errorf("row columns: %v", row.Extra)
		}
		if arm == ArmBaseline && !math.IsNaN(row.Seconds) {
			t.Errorf("baseline row has a time %g: it sent no prefill", row.Seconds)
		}
	}
	in, ctl, base := penalty[ArmInterfere], penalty[ArmControl], penalty[ArmBaseline]
	if !(in[0] > 1.5 && in[1] > in[0]) {
		t.Errorf("interfere penalty %v: want > 1.5 and growing with P", in)
	}
	for i := range ctl {
		if ctl[i] > 2 || base[i] > 2 {
			t.Errorf("P index %d: control penalty %.3g, baseline %.3g: want about 1", i, ctl[i], base[i])
		}
	}
	// Token series: every token of every arm, in order per stream.
	if len(toks.rows) < 6*2*(32+minBase) {
		t.Errorf("%d token rows", len(toks.rows))
	}
	for i := 1; i < len(toks.rows); i++ {
		a, b := toks.rows[i-1], toks.rows[i]
		if a.Get("arm") == b.Get("arm") && a.Get("stream") == b.Get("stream") && b.Get("index") != "0" && b.Float("t_s") < a.Float("t_s") {
			t.Fatalf("token times go back: %v then %v", a.Extra, b.Extra)
		}
	}
}

func TestCompute(t *testing.T) {
	// One stream: a token every 10 ms until 1.0 s, then nothing until 1.5
	// s (the prefill), then every 10 ms again. Warm-up 2.
	var ts []float64
	for t := 0.0; t < 1.0; t += 0.01 {
		ts = append(ts, t)
	}
	ts = append(ts, 1.5, 1.51, 1.52)
	st := compute([][]float64{ts}, 2, 1.0, 0.5)
	if math.Abs(st.baseTPOT-0.01) > 1e-9 {
		t.Errorf("base TPOT %g", st.baseTPOT)
	}
	if st.tokensDuring != 1 || st.effTPOT != 0.5 || math.Abs(st.penalty-50) > 1e-6 {
		t.Errorf("during %g eff %g penalty %g", st.tokensDuring, st.effTPOT, st.penalty)
	}
	if math.Abs(st.benefit-0.49) > 1e-9 {
		t.Errorf("benefit %g", st.benefit)
	}
	if math.Abs(st.itlP90During-0.51) > 1e-3 || math.Abs(st.itlP50-0.01) > 1e-9 {
		t.Errorf("itl during p90 %g base p50 %g", st.itlP90During, st.itlP50)
	}
	// Nothing during: unbounded, not a number.
	st = compute([][]float64{ts[:50]}, 2, 1.0, 0.5)
	if !math.IsNaN(st.effTPOT) || !math.IsNaN(st.penalty) {
		t.Errorf("no tokens during gave eff %g penalty %g", st.effTPOT, st.penalty)
	}
}

func TestValidateAndUnreachable(t *testing.T) {
	err := Config{Decode: []int{0}, Reps: 0}.Validate()
	for _, want := range []string{"--endpoint", "--decode 0", "--prefill is empty", "--reps", "--inject-after", "--timeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
	_, err = New(context.Background(), Config{Endpoint: "http://127.0.0.1:1", Decode: []int{1}, Prefill: []int{16},
		Reps: 1, InjectAfter: time.Second, Timeout: time.Second})
	if !errors.Is(err, probe.ErrUnreachable) {
		t.Errorf("err = %v, want ErrUnreachable", err)
	}
}

// TestDecodeStall: a server whose decode streams stop after a few tokens
// and hang gives an error row naming the problem, within the timeout.
func TestDecodeStall(t *testing.T) {
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
		}
	}))
	defer srv.Close()
	r, err := New(t.Context(), Config{Endpoint: srv.URL, Decode: []int{2}, Prefill: []int{64}, Reps: 1,
		InjectAfter: 10 * time.Millisecond, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var rows, toks memSink
	if err := r.Run(t.Context(), &rows, &toks); err != nil {
		t.Fatal(err)
	}
	if len(rows.rows) != 2 {
		t.Fatalf("%d rows", len(rows.rows))
	}
	if r := rows.rows[0]; r.Status != results.StatusError || !strings.Contains(r.Reason, "did not reach 40 tokens") {
		t.Errorf("interfere row: %s %q", r.Status, r.Reason)
	}
	if r := rows.rows[1]; r.Status != results.StatusSkipped || !strings.Contains(r.Reason, "no window") {
		t.Errorf("baseline row: %s %q", r.Status, r.Reason)
	}
	if len(toks.rows) != 6 {
		t.Errorf("%d token rows, want the 6 that arrived", len(toks.rows))
	}
}
