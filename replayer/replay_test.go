package replayer

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/workload"
)

// writeTrace writes trace lines to a file and loads it.
func writeTrace(t *testing.T, o workload.Options, lines ...string) *Workload {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := LoadTrace(context.Background(), path, o, 0)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestPromptsRealizeSharing(t *testing.T) {
	t.Parallel()
	w := writeTrace(t, workload.Options{},
		`{"chat_id":1,"parent_chat_id":-1,"timestamp":0,"input_length":40,"output_length":3,"hash_ids":[1,2,3]}`,
		`{"chat_id":2,"parent_chat_id":-1,"timestamp":1,"input_length":48,"output_length":3,"hash_ids":[1,2,4]}`,
		`{"chat_id":3,"parent_chat_id":-1,"timestamp":2,"input_length":50,"output_length":3,"hash_ids":[1]}`,
		`{"chat_id":4,"parent_chat_id":-1,"timestamp":3,"input_length":50,"output_length":3,"hash_ids":[1]}`,
	)
	p := Prompts{Seed: 7}
	var ps [][]int
	for _, r := range w.Requests {
		ps = append(ps, p.Tokens(r))
		if len(ps[len(ps)-1]) != r.Input {
			t.Fatalf("request %d: %d tokens, want input_length %d", r.Index, len(ps[len(ps)-1]), r.Input)
		}
	}
	common := func(a, b []int) int {
		n := 0
		for n < min(len(a), len(b)) && a[n] == b[n] {
			n++
		}
		return n
	}
	for _, c := range []struct {
		a, b, want int
		why        string
	}{
		{0, 1, 32, "hash ids 1 and 2 shared, 3 and 4 not"},
		{0, 2, 16, "hash id 1 shared"},
		{2, 3, 16, "tokens past the hash ids are each request's own"},
	} {
		if got := common(ps[c.a], ps[c.b]); got != c.want {
			t.Errorf("requests %d and %d share %d leading tokens, want %d (%s)", c.a, c.b, got, c.want, c.why)
		}
	}
	if !slices.Equal(ps[0][32:40], p.Tokens(w.Requests[0])[32:40]) || slices.Equal(ps[0][32:40], ps[1][32:40]) {
		t.Error("a partial last block must be its hash id's block cut short, and differ from another id's")
	}
	if common(ps[0], Prompts{Seed: 8}.Tokens(w.Requests[0])) > 0 {
		t.Error("another seed must give other tokens")
	}
}

func TestOrderRoundRobin(t *testing.T) {
	t.Parallel()
	w, err := Generate(context.Background(), workload.GenOptions{Sessions: 3, Turns: 2, TurnTokens: 32, OutputTokens: 4, BlockTokens: 16, Seed: 1, Fixed: true, Duration: time.Minute}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sess := w.Sessions()
	if len(sess) != 3 || len(sess[0]) != 2 {
		t.Fatalf("%d sessions", len(sess))
	}
	var got []string
	for _, r := range w.Order(DispatchSession, 2) {
		got = append(got, string(rune('a'+slices.IndexFunc(sess, func(s []*workload.Request) bool { return s[0].Session == r.Session })))+string(rune('0'+r.Turn)))
	}
	// Two slots: a and b take turns; c takes a's slot when a is done.
	if want := []string{"a1", "b1", "a2", "b2", "c1", "c2"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if o := w.Order(DispatchTimestamp, 2); !slices.Equal(o, w.Requests) {
		t.Error("timestamp order must be the trace's")
	}
}

// TestWorkingSetOfReferenceSessions checks the default sessions against
// the reference's knee workload: 4 sessions of about 0.91 GB of
// Qwen3-Coder KV (98,304 bytes per token) each at its end, prompt and
// answer (within 5 %), and a working set (shared prompt once, the last
// answers never reused) that the reference's 3.6 GB pool holds and its
// 2.4 GB pool does not.
func TestWorkingSetOfReferenceSessions(t *testing.T) {
	t.Parallel()
	w, err := Generate(context.Background(), DefaultSessions(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := w.WorkingSet(DispatchSession, 4)
	if err != nil {
		t.Fatal(err)
	}
	if gb := float64(ws) * 98304 / 1e9; len(w.Requests) != 24 || gb > 3.6 || gb < 2.4 {
		t.Errorf("%d requests, working set %d tokens = %.2f GB, want 24 and 2.4 to 3.6 GB", len(w.Requests), ws, gb)
	}
	for _, r := range w.Requests {
		if gb := float64(r.Input+r.Output) * 98304 / 1e9; r.Turn == 6 && math.Abs(gb/0.91-1) > 0.05 {
			t.Errorf("session %d ends at %d + %d tokens = %.2f GB, want 0.91 GB within 5 %%", r.Session, r.Input, r.Output, gb)
		}
	}
}

// inSim runs f in a synctest bubble against a simulator of cfg served
// through wrap (nil: as it is) on an in-memory network.
func inSim(t *testing.T, cfg vllmsim.Config, wrap func(http.Handler) http.Handler, f func(t *testing.T, url string, c *http.Client)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		if cfg.TimeScale == 0 {
			cfg.TimeScale = 1
		}
		s, err := vllmsim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var h http.Handler = s
		if wrap != nil {
			h = wrap(s)
		}
		url, err := net.Serve(h, "sim")
		if err != nil {
			t.Fatal(err)
		}
		f(t, url, net.Client())
	})
}

func run(t *testing.T, url string, c *http.Client, w *Workload, cfg Config) (*Summary, []results.Row, error) {
	t.Helper()
	cfg.Endpoint, cfg.HTTP = url, c
	if cfg.Dispatch == "" {
		cfg.Dispatch = DispatchTimestamp
	}
	if cfg.Speedup == 0 {
		cfg.Speedup = 1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Minute
	}
	rp, err := New(context.Background(), cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	var sink resultstest.Sink
	sum, err := rp.Run(context.Background(), &sink, nil)
	rows := sink.Rows()
	slices.SortFunc(rows, func(a, b results.Row) int { return int(a.Float("request_index") - b.Float("request_index")) })
	return sum, rows, err
}

func TestNewRefusesBlocksNotAWholeNumberOfTheServers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		traceBlock int
		refused    bool
	}{{24, true}, {8, true}, {32, false}, {16, false}} {
		w := writeTrace(t, workload.Options{BlockTokens: tc.traceBlock}, `{"chat_id":1,"timestamp":0,"input_length":100,"output_length":3,"hash_ids":[1]}`)
		inSim(t, vllmsim.Config{GPUBlocks: 64}, nil, func(t *testing.T, url string, c *http.Client) {
			_, err := New(context.Background(), Config{Endpoint: url, HTTP: c, Dispatch: DispatchTimestamp, Speedup: 1, Timeout: time.Minute}, w)
			if refused := err != nil && strings.Contains(err.Error(), "not a whole number of the server's 16-token blocks"); refused != tc.refused {
				t.Errorf("trace block %d: error %v, want refused %v", tc.traceBlock, err, tc.refused)
			}
		})
	}
}

// mooncake returns a Mooncake line of one session.
func mooncake(ms, input, output int, session string, ids string) string {
	return `{"timestamp":` + strconv.Itoa(ms) + `,"input_length":` + strconv.Itoa(input) + `,"output_length":` + strconv.Itoa(output) + `,"hash_ids":[` + ids + `],"session_id":"` + session + `"}`
}

func TestTimestampDispatch(t *testing.T) {
	t.Parallel()
	w := writeTrace(t, workload.Options{BlockTokens: 16},
		mooncake(0, 64, 200, "a", "1,2,3,4"), mooncake(1000, 64, 4, "b", "5,6,7,8"),
		mooncake(5000, 64, 4, "c", "9,10"), mooncake(9000, 64, 4, "d", "11"))
	for _, tc := range []struct {
		name       string
		cfg        Config
		sched      []float64
		lateAfter1 bool // request 1 waits for request 0's slot
		sent       int
	}{
		{"speedup 2", Config{Speedup: 2}, []float64{0, 0.5, 2.5, 4.5}, false, 4},
		{"one in flight", Config{Speedup: 2, Concurrency: 1}, []float64{0, 0.5, 2.5, 4.5}, true, 4},
		{"duration", Config{Speedup: 1, Duration: 6 * time.Second}, []float64{0, 1, 5}, false, 3},
	} {
		inSim(t, vllmsim.Config{GPUBlocks: 256}, nil, func(t *testing.T, url string, c *http.Client) {
			sum, rows, err := run(t, url, c, w, tc.cfg)
			if err != nil || len(rows) != tc.sent || sum.OK != tc.sent {
				t.Fatalf("%s: %v, %d rows, %d ok", tc.name, err, len(rows), sum.OK)
			}
			for i, r := range rows {
				if math.Abs(r.Float("sched_s")-tc.sched[i]) > 1e-9 {
					t.Errorf("%s: request %d due at %g s, want %g", tc.name, i, r.Float("sched_s"), tc.sched[i])
				}
				late := r.Float("dispatch_s") - r.Float("sched_s")
				if wantLate := tc.lateAfter1 && i == 1; (late > 0.1) != wantLate {
					t.Errorf("%s: request %d sent %.3f s after it was due", tc.name, i, late)
				}
			}
		})
	}
}

func TestSessionDispatchIsClosedLoop(t *testing.T) {
	t.Parallel()
	// Session a: two turns 30 s apart in the trace; session b one turn.
	w := writeTrace(t, workload.Options{BlockTokens: 16},
		mooncake(0, 64, 8, "a", "1,2,3,4"), mooncake(0, 32, 8, "b", "9,10"), mooncake(30000, 96, 8, "a", "1,2,3,4,5,6"))
	inSim(t, vllmsim.Config{GPUBlocks: 256}, nil, func(t *testing.T, url string, c *http.Client) {
		_, rows, err := run(t, url, c, w, Config{Dispatch: DispatchSession, Speedup: 10, Concurrency: 1})
		if err != nil || len(rows) != 3 {
			t.Fatalf("%v, %d rows", err, len(rows))
		}
		a1, b1, a2 := rows[0], rows[1], rows[2]
		if a1.Get("session") != a2.Get("session") || a2.Get("turn") != "2" {
			t.Fatalf("rows %v %v", a1.Extra, a2.Extra)
		}
		// The second turn goes out when the first answered, plus the
		// trace's 30 s gap over the speedup of 10.
		if want := a1.Float("dispatch_s") + a1.Float("e2e_s") + 3; math.Abs(a2.Float("dispatch_s")-want) > 0.01 {
			t.Errorf("turn 2 sent at %.3f s, want %.3f", a2.Float("dispatch_s"), want)
		}
		// One session at a time: b after a's last turn.
		if !(b1.Float("dispatch_s") > a2.Float("dispatch_s")) {
			t.Errorf("session b sent at %.3f s, before session a ended", b1.Float("dispatch_s"))
		}
	})
}

// failing wraps a server: requests whose X-Request-Id ends in -1 get
// HTTP 500, those ending in -2 are held past any timeout, and /metrics
// answers 404 when noMetrics.
func failing(noMetrics bool) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get("X-Request-Id")
			switch {
			case noMetrics && r.URL.Path == "/metrics":
				http.NotFound(w, r)
			case strings.HasSuffix(id, "-1"):
				http.Error(w, `{"error":{"message":"boom","code":500}}`, http.StatusInternalServerError)
			case strings.HasSuffix(id, "-2"):
				// Read the body, so the server notices the client leave;
				// hold past the client's timeout (virtual time).
				io.Copy(io.Discard, r.Body)
				select {
				case <-r.Context().Done():
				case <-time.After(time.Hour):
				}
			default:
				h.ServeHTTP(w, r)
			}
		})
	}
}

func TestFailuresAndTimeoutsAreCounted(t *testing.T) {
	t.Parallel()
	w := writeTrace(t, workload.Options{BlockTokens: 16},
		mooncake(0, 64, 4, "a", "1,2,3,4"), mooncake(1000, 64, 4, "b", "1,2,3,4"),
		mooncake(2000, 64, 4, "c", "1,2,3,4"), mooncake(3000, 64, 4, "d", "1,2,3,4"))
	inSim(t, vllmsim.Config{GPUBlocks: 256, EnablePromptTokensDetails: true}, failing(false), func(t *testing.T, url string, c *http.Client) {
		sum, rows, err := run(t, url, c, w, Config{Timeout: 5 * time.Second, SLOTTFT: time.Second})
		if err != nil || len(rows) != 4 {
			t.Fatalf("%v, %d rows", err, len(rows))
		}
		want := []string{OutcomeOK, OutcomeFailed, OutcomeTimeout, OutcomeOK}
		for i, r := range rows {
			if r.Get("outcome") != want[i] || (r.Status == results.StatusOK) != (want[i] == OutcomeOK) {
				t.Errorf("request %d: %s %s %q, want %s", i, r.Get("outcome"), r.Status, r.Reason, want[i])
			}
		}
		if sum.OK != 2 || sum.Failed != 1 || sum.TimedOut != 1 || sum.SLOMet != 2 {
			t.Errorf("summary %d ok, %d failed, %d timed out, %d met the SLO", sum.OK, sum.Failed, sum.TimedOut, sum.SLOMet)
		}
		row := sum.Row("replay")
		if row.Status != results.StatusError || row.Get("failed") != "1" || row.Get("timed_out") != "1" || row.Get("sim_lag_s") != "0" {
			t.Errorf("run row %s %q, sim lag %q (virtual time: 0)", row.Status, row.Reason, row.Get("sim_lag_s"))
		}
		if g := row.Float("goodput_rps"); math.Abs(g-2/sum.Duration.Seconds()) > 1e-9 {
			t.Errorf("goodput %g req/s, want 2 over %v", g, sum.Duration)
		}
		// Request 3 hits what request 0 left: realized APC and usage agree.
		if got := rows[3].Float("cached_tokens"); got != 48 || sum.Hits != 48 || sum.Queries != 128 {
			t.Errorf("cached %g, hits %g of %g queries", got, sum.Hits, sum.Queries)
		}
	})
}

func TestNoMetricsNoAPC(t *testing.T) {
	t.Parallel()
	w := writeTrace(t, workload.Options{BlockTokens: 16}, mooncake(0, 64, 4, "a", "1,2,3,4"))
	inSim(t, vllmsim.Config{GPUBlocks: 256}, failing(true), func(t *testing.T, url string, c *http.Client) {
		sum, _, err := run(t, url, c, w, Config{GPUBlocks: 100})
		if err != nil {
			t.Fatal(err)
		}
		row := sum.Row("replay")
		if row.Get("apc") != "" || !strings.Contains(row.Get("apc_source"), "no /metrics") || row.Get("gpu_blocks") != "100" || row.Get("sim_lag_s") != "" {
			t.Errorf("apc %q source %q gpu blocks %q", row.Get("apc"), row.Get("apc_source"), row.Get("gpu_blocks"))
		}
		if sum.Info.BlockSource != "assumed (vLLM default; vllm:cache_config_info missing)" {
			t.Errorf("block size from %q", sum.Info.BlockSource)
		}
	})
}

func TestMaxOutputAndModelLength(t *testing.T) {
	t.Parallel()
	w := writeTrace(t, workload.Options{BlockTokens: 16}, mooncake(0, 64, 40, "a", "1,2,3,4"), mooncake(1000, 200, 4, "b", "5"))
	inSim(t, vllmsim.Config{GPUBlocks: 256, MaxModelLen: 128}, nil, func(t *testing.T, url string, c *http.Client) {
		sum, rows, err := run(t, url, c, w, Config{MaxOutput: 10})
		if err != nil || len(rows) != 2 {
			t.Fatalf("%v, %d rows", err, len(rows))
		}
		if rows[0].Get("max_tokens") != "10" || rows[0].Get("output_tokens") != "10" {
			t.Errorf("max_tokens %s, output %s: want the cap, 10", rows[0].Get("max_tokens"), rows[0].Get("output_tokens"))
		}
		if rows[1].Status != results.StatusSkipped || !strings.Contains(rows[1].Reason, "max_model_len 128") || sum.Skipped != 1 {
			t.Errorf("a prompt over max_model_len: %s %q", rows[1].Status, rows[1].Reason)
		}
	})
}

func TestInterruptedRunKeepsRows(t *testing.T) {
	t.Parallel()
	w := writeTrace(t, workload.Options{BlockTokens: 16},
		mooncake(0, 64, 4, "a", "1"), mooncake(10000, 64, 4, "b", "2"), mooncake(20000, 64, 4, "c", "3"))
	inSim(t, vllmsim.Config{GPUBlocks: 256}, nil, func(t *testing.T, url string, c *http.Client) {
		rp, err := New(context.Background(), Config{Endpoint: url, HTTP: c, Dispatch: DispatchTimestamp, Speedup: 1, Timeout: time.Minute}, w)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		var sink resultstest.Sink
		_, err = rp.Run(ctx, &sink, nil)
		if !errors.Is(err, context.DeadlineExceeded) || sink.Len() != 2 {
			t.Errorf("%v, %d rows; want the context's error and the 2 requests sent before it", err, sink.Len())
		}
	})
}
