package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/serving"
)

// mustNew is New that fails the test on an error.
func mustNew(t *testing.T, cfg Config) *Prober {
	t.Helper()
	p, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mustRun runs p into a resultstest.Sink, failing the test on an error.
func mustRun(t *testing.T, p *Prober) *resultstest.Sink {
	t.Helper()
	var sink resultstest.Sink
	if err := p.Run(t.Context(), &sink); err != nil {
		t.Fatal(err)
	}
	return &sink
}

func testConfig(endpoint string) Config {
	return Config{
		Endpoint: endpoint, Tiers: []string{"miss", "gpu"}, Prefixes: []int{256},
		Reps: 2, Seed: 1, Nonce: 7, EvictMargin: 1.5, Timeout: 5 * time.Second,
	}
}

func TestProbeFakeMissAndGPU(t *testing.T) {
	f, srv := newFake(t)
	cfg := testConfig(srv.URL)
	cfg.BlockBytes = func(model string, bs int) int64 { return 1000 }
	p := mustNew(t, cfg)
	if p.Info().Model != "fake-model" || p.Info().BlockSource != "assumed (vLLM default; vllm:cache_config_info missing)" {
		t.Errorf("info = %+v", p.Info())
	}
	sink := mustRun(t, p)
	if sink.Len() != 4 {
		t.Fatalf("%d rows, want 4", sink.Len())
	}
	for _, r := range sink.Rows() {
		if r.Status != results.StatusOK || r.Get("verified") != "true" {
			t.Errorf("%s rep %d: status %s verified %s (%s %s)", r.Tier, r.Rep, r.Status, r.Get("verified"), r.Reason, r.Get("verify_reason"))
		}
		if r.Blocks != 16 || r.Bytes != 16000 || r.Get("prompt_tokens") != "256" || r.Get("http_status") != "200" {
			t.Errorf("row %+v", r)
		}
		if want := fmt.Sprintf("kvtier-1-%s-256-%d", r.Tier, r.Rep); r.Get("request_id") != want {
			t.Errorf("request_id %q, want %q", r.Get("request_id"), want)
		}
		if r.Seconds != r.Float("ttft_s") || r.Float("e2e_s") < r.Seconds {
			t.Errorf("times: seconds %g ttft %g e2e %g", r.Seconds, r.Float("ttft_s"), r.Float("e2e_s"))
		}
	}
	if h := sink.Rows()[2].Get("hit_tokens"); h != "240" {
		t.Errorf("gpu hit_tokens = %s, want 240", h)
	}
	if h := sink.Rows()[0].Get("hit_tokens"); h != "0" {
		t.Errorf("miss hit_tokens = %s, want 0", h)
	}
	// Every prompt has exactly L token ids; the gpu warm-up and its
	// measured request share the prompt, salt and request id stem.
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.requests {
		if n := len(b["prompt"].([]any)); n != 256 {
			t.Errorf("prompt of %d tokens", n)
		}
	}
	if !strings.HasSuffix(f.ids[2], "-warm") || f.ids[3] != "kvtier-1-gpu-256-0" {
		t.Errorf("request ids %v", f.ids)
	}
	if fmt.Sprint(f.requests[2]["cache_salt"]) != fmt.Sprint(f.requests[3]["cache_salt"]) ||
		fmt.Sprint(f.requests[0]["cache_salt"]) == fmt.Sprint(f.requests[1]["cache_salt"]) {
		t.Error("salts: the warm-up must share the measured request's salt, and miss reps must not share one")
	}
	if f.requests[3]["stream_options"] == nil || f.requests[3]["ignore_eos"] != true {
		t.Errorf("measured request body %v", f.requests[3])
	}
}

// A server's impossible figures make its rows unverified, saying why,
// and an impossible cached count never becomes the row's cached_tokens.
func TestProbeImpossibleFigures(t *testing.T) {
	for _, tc := range []struct {
		name           string
		cached, output int
		want           string
	}{
		{"cached above the prompt", 18597, 0, "cached_tokens 18597 above the prompt's 256 tokens"},
		{"completion past max_tokens", 0, 5000, "completion_tokens 5000 past max_tokens"},
	} {
		f, srv := newFake(t)
		f.lieCached, f.lieOutput = tc.cached, tc.output
		cfg := testConfig(srv.URL)
		cfg.Reps = 1
		sink := mustRun(t, mustNew(t, cfg))
		for _, r := range sink.Rows() {
			if r.Get("verified") != "false" || !strings.Contains(r.Get("verify_reason"), tc.want) ||
				!strings.Contains(r.Get("server_check"), "impossible: ") || (tc.cached > 0) != (r.Get("cached_tokens") == "") {
				t.Errorf("%s, %s: verified %s (%s), server_check %q, cached_tokens %q", tc.name, r.Tier, r.Get("verified"), r.Get("verify_reason"), r.Get("server_check"), r.Get("cached_tokens"))
			}
		}
	}
}

// A simulator that falls behind real time during a row by more than a
// tenth of its TTFT makes the row unverified, saying so, with its lag.
func TestProbeSimLag(t *testing.T) {
	for _, tc := range []struct {
		step     float64
		verified string
	}{{1e-9, "true"}, {10, "false"}} {
		f, srv := newFake(t)
		f.lagStep = tc.step
		cfg := testConfig(srv.URL)
		cfg.Reps = 1
		for _, r := range mustRun(t, mustNew(t, cfg)).Rows() {
			lagged := strings.Contains(r.Get("verify_reason"), "further behind real time during the row")
			if r.Get("verified") != tc.verified || lagged != (tc.verified == "false") || !(r.Float("sim_lag_s") >= tc.step) {
				t.Errorf("lag %g s per request, %s: verified %s (%s), sim_lag_s %s", tc.step, r.Tier, r.Get("verified"), r.Get("verify_reason"), r.Get("sim_lag_s"))
			}
		}
	}
}

func TestProbeSkips(t *testing.T) {
	_, srv := newFake(t)
	cfg := testConfig(srv.URL)
	cfg.Tiers = []string{"cpu", "remote"}
	cfg.Reps = 1
	p := mustNew(t, cfg)
	sink := mustRun(t, p)
	want := map[string]string{
		"cpu":    "cannot size eviction: vllm:cache_config_info missing",
		"remote": "remote tier needs --producer",
	}
	for _, r := range sink.Rows() {
		if r.Status != results.StatusSkipped || !strings.HasPrefix(r.Reason, want[r.Tier]) {
			t.Errorf("%s: %s %q", r.Tier, r.Status, r.Reason)
		}
	}
}

func TestProbeCPUNotVerifiedWithoutOffload(t *testing.T) {
	// The fake has no offload and never evicts: the cpu row must say the
	// prefix never left the GPU, never claim a CPU hit.
	f, srv := newFake(t)
	f.gpuBlocks = 64
	cfg := testConfig(srv.URL)
	cfg.Tiers, cfg.Reps = []string{"cpu"}, 1
	p := mustNew(t, cfg)
	sink := mustRun(t, p)
	r := sink.Rows()[0]
	if r.Status != results.StatusOK || r.Get("verified") != "false" || !strings.Contains(r.Get("verify_reason"), "still in GPU memory") {
		t.Errorf("cpu row: %s verified=%s reason %q", r.Status, r.Get("verified"), r.Get("verify_reason"))
	}
	// 64 blocks × 16 × 1.5 = 1536 filler tokens, one request of 1536.
	f.mu.Lock()
	defer f.mu.Unlock()
	fill := 0
	for i, id := range f.ids {
		if strings.Contains(id, "-fill-") {
			fill += len(f.requests[i]["prompt"].([]any))
		}
	}
	if fill < 1536 {
		t.Errorf("filler tokens = %d, want >= 1536", fill)
	}
}

// TestProbeErrorRows checks that each way a request can fail becomes an
// error row with the status or transport error, and the sweep goes on.
func TestProbeErrorRows(t *testing.T) {
	tests := []struct {
		name   string
		fail   func(w http.ResponseWriter) bool
		status string // http_status column
		reason string // substring of the reason
	}{
		{"500 before the stream", func(w http.ResponseWriter) bool {
			w.WriteHeader(500)
			fmt.Fprint(w, `{"object":"error","message":"EngineCore died","type":"InternalServerError","code":500}`)
			return true
		}, "500", "HTTP 500: EngineCore died"},
		{"503 plain text", func(w http.ResponseWriter) bool {
			http.Error(w, "upstream overloaded", http.StatusServiceUnavailable)
			return true
		}, "503", "HTTP 503: upstream overloaded"},
		{"error event mid-stream", func(w http.ResponseWriter) bool {
			streamPrefix(w)
			fmt.Fprint(w, "data: {\"error\":{\"message\":\"CUDA error: an illegal memory access\",\"type\":\"InternalServerError\",\"code\":500}}\n\n")
			return true
		}, "200", "server error (code 500): CUDA error"},
		{"stream cut without usage or [DONE]", func(w http.ResponseWriter) bool {
			streamPrefix(w)
			return true
		}, "200", "stream ended without [DONE] and without usage"},
		{"connection reset mid-stream", func(w http.ResponseWriter) bool {
			streamPrefix(w)
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err == nil {
				buf.Flush()
				conn.Close()
			}
			return true
		}, "200", "reading stream"},
		{"connection closed before any response", func(w http.ResponseWriter) bool {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return true
		}, "", "POST /v1/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t)
			cfg := testConfig(srv.URL)
			cfg.Tiers = []string{"miss"}
			p := mustNew(t, cfg)
			f.failNext = tt.fail
			sink := mustRun(t, p)
			if sink.Len() != 2 {
				t.Fatalf("%d rows, want 2: the sweep must go on", sink.Len())
			}
			r := sink.Rows()[0]
			if r.Status != results.StatusError || !strings.Contains(r.Reason, tt.reason) || r.Get("http_status") != tt.status {
				t.Errorf("row: %s http_status %q reason %q; want error, %q, %q", r.Status, r.Get("http_status"), r.Reason, tt.status, tt.reason)
			}
			if r.Get("ttft_s") != "" || r.Get("seconds") != "" {
				t.Errorf("an error row carries a time: %+v", r)
			}
			if sink.Rows()[1].Status != results.StatusOK {
				t.Errorf("the next rep: %s %s", sink.Rows()[1].Status, sink.Rows()[1].Reason)
			}
		})
	}
}

func TestProbeTimeout(t *testing.T) {
	f, srv := newFake(t)
	cfg := testConfig(srv.URL)
	cfg.Tiers, cfg.Reps, cfg.Timeout = []string{"miss"}, 1, 200*time.Millisecond
	p := mustNew(t, cfg)
	f.failNext = func(w http.ResponseWriter) bool {
		streamPrefix(w)
		time.Sleep(time.Second)
		return true
	}
	sink := mustRun(t, p)
	if r := sink.Rows()[0]; r.Status != results.StatusError || !strings.Contains(r.Reason, "deadline exceeded") {
		t.Errorf("row: %s %q", r.Status, r.Reason)
	}
}

func TestProbeSaltRefused(t *testing.T) {
	f, srv := newFake(t)
	f.noSalt = true
	cfg := testConfig(srv.URL)
	p := mustNew(t, cfg)
	sink := mustRun(t, p)
	for _, r := range sink.Rows() {
		if r.Status != results.StatusOK || r.Get("verified") != "true" {
			t.Errorf("%s: %s %s %s", r.Tier, r.Status, r.Reason, r.Get("verify_reason"))
		}
	}
	if p.Client().SaltSupported() != -1 {
		t.Errorf("salt support = %d, want -1", p.Client().SaltSupported())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// One refused request, then none carries a salt.
	withSalt := 0
	for _, b := range f.requests {
		if _, ok := b["cache_salt"]; ok {
			withSalt++
		}
	}
	if withSalt != 1 {
		t.Errorf("%d requests carried cache_salt, want 1 (the refused one)", withSalt)
	}
}

func TestProbeUnreachable(t *testing.T) {
	_, srv := newFake(t)
	url := srv.URL
	srv.Close()
	_, err := New(context.Background(), testConfig(url))
	if !errors.Is(err, serving.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
}

// TestConfigValidate: every problem at once, each an option.Error naming
// its field (cmd makes flags of them), none speaking of flags itself.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	err := Config{Tiers: []string{"gpu", "disk"}, Reps: 0, EvictMargin: 0.5, Timeout: 0, Connector: "ucx",
		BlockSize: kv.MaxBlockTokens + 1, BootstrapPort: 70000, API: "grpc"}.Validate()
	want := []string{"base-url", "tiers", "prefix", "reps", "evict-margin", "block-size", "bootstrap-port", "timeout", "connector", "api"}
	if got := option.Fields(err); !slices.Equal(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	for _, want := range []string{`unknown tier "disk"`, "evict-margin: want 1 to 1000, got 0.5", `"ucx"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "--") {
		t.Errorf("a library error speaks of flags: %q", err)
	}
}

func TestVerify(t *testing.T) {
	const l, bs = 1024, 16
	cached := func(n int) *serving.Usage {
		u := &serving.Usage{}
		u.PromptTokensDetails = &struct {
			CachedTokens *int `json:"cached_tokens"`
		}{&n}
		return u
	}
	gen := Generation{External: ExtQueried}
	tests := []struct {
		name   string
		tier   string
		d      serving.Delta
		merr   error
		u      *serving.Usage
		ok     bool
		reason string
	}{
		{"gpu hit", "gpu", serving.Delta{Hits: 1008, Queries: 1024, HitsFound: true}, nil, nil, true, ""},
		{"gpu short", "gpu", serving.Delta{Hits: 512, Queries: 1024, HitsFound: true}, nil, nil, false, "prefix_cache_hits rose by 512 of 1024"},
		{"gpu from cached_tokens", "gpu", serving.Delta{}, nil, cached(1008), true, ""},
		{"gpu nothing", "gpu", serving.Delta{}, nil, nil, false, "/metrics has no vllm:prefix_cache_hits"},
		{"metrics down", "gpu", serving.Delta{}, errors.New("GET /metrics: refused"), nil, false, "cannot verify: GET /metrics: refused"},
		{"cpu hit", "cpu", serving.Delta{Hits: 0, ExtHits: 1008, Queries: 1024, HitsFound: true, ExtFound: true}, nil, nil, true, ""},
		{"cpu no offload", "cpu", serving.Delta{ExtHits: 0, Queries: 1024, HitsFound: true, ExtFound: true}, nil, nil, false, "external_prefix_cache_hits rose by 0 of 1024: the server has no CPU offload?"},
		{"cpu still on gpu", "cpu", serving.Delta{Hits: 1008, Queries: 1024, HitsFound: true, ExtFound: true}, nil, nil, false, "still in GPU memory"},
		{"cpu no external counter", "cpu", serving.Delta{Hits: 1008, HitsFound: true}, nil, cached(1008), false, "still in GPU memory"},
		{"remote hit", "remote", serving.Delta{ExtHits: 1024, ExtFound: true, HitsFound: true}, nil, nil, true, ""},
		{"remote none", "remote", serving.Delta{ExtFound: true, HitsFound: true}, nil, nil, false, "did not pull"},
		{"miss", "miss", serving.Delta{Queries: 1024, HitsFound: true}, nil, nil, true, ""},
		{"miss but cached", "miss", serving.Delta{Hits: 1008, Queries: 1024, HitsFound: true}, nil, nil, false, "already cached"},
		{"concurrent", "gpu", serving.Delta{Hits: 2016, Queries: 2048, HitsFound: true}, nil, nil, false, "concurrent traffic"},
		{"too short for a hit", "gpu", serving.Delta{HitsFound: true}, nil, nil, false, "no complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := l
			if tt.name == "too short for a hit" {
				n = bs
			}
			v := Verify(Check{Tier: tt.tier, L: n, Grain: bs, Gen: gen}, tt.d, tt.merr, tt.u)
			if v.OK != tt.ok || !strings.Contains(v.Reason, tt.reason) || (v.OK && v.Reason != "") {
				t.Errorf("Verify = %+v, want %v %q", v, tt.ok, tt.reason)
			}
		})
	}
}

func TestProbeNoMetrics(t *testing.T) {
	f, srv := newFake(t)
	f.noMetrics, f.cachedField = true, false
	cfg := testConfig(srv.URL)
	cfg.Reps = 1
	p := mustNew(t, cfg)
	if !strings.Contains(p.Info().MetricsError, "404") {
		t.Errorf("metrics error %q", p.Info().MetricsError)
	}
	sink := mustRun(t, p)
	for _, r := range sink.Rows() {
		if r.Status != results.StatusOK || r.Get("verified") != "false" || !strings.Contains(r.Get("verify_reason"), "cannot verify: GET /metrics: HTTP 404") {
			t.Errorf("%s: %s verified=%s %q", r.Tier, r.Status, r.Get("verified"), r.Get("verify_reason"))
		}
		if r.Get("hit_tokens") != "" {
			t.Errorf("%s: hit_tokens %q without counters", r.Tier, r.Get("hit_tokens"))
		}
		if n := strings.Count(r.Get("verify_reason"), "GET /metrics"); n != 1 {
			t.Errorf("%s: verify_reason %q names the failed read %d times, want once", r.Tier, r.Get("verify_reason"), n)
		}
		if r.Get("counter_generation") != "no /metrics" || strings.ContainsAny(r.Get("verify_reason"), "\r\n") {
			t.Errorf("%s: counter_generation %q, verify_reason %q", r.Tier, r.Get("counter_generation"), r.Get("verify_reason"))
		}
	}
}

// TestProbeRemoteRequests checks what the remote tier asks of the
// producer and the consumer, for both connectors, against fakes (the
// fakes do not transfer KV, so the rows are not verified).
func TestProbeRemoteRequests(t *testing.T) {
	for _, conn := range Connectors {
		t.Run(conn, func(t *testing.T) {
			prod, psrv := newFake(t)
			cons, csrv := newFake(t)
			cfg := testConfig(csrv.URL)
			cfg.Producer, cfg.Connector, cfg.Tiers, cfg.Reps = psrv.URL, conn, []string{"remote"}, 1
			p := mustNew(t, cfg)
			sink := mustRun(t, p)
			r := sink.Rows()[0]
			prod.mu.Lock()
			defer prod.mu.Unlock()
			cons.mu.Lock()
			defer cons.mu.Unlock()
			if len(prod.requests) != 1 {
				t.Fatalf("producer got %d requests", len(prod.requests))
			}
			pb := prod.requests[0]
			pkv, _ := pb["kv_transfer_params"].(map[string]any)
			if pb["max_tokens"] != 1.0 || pb["stream"] != false || pkv["do_remote_decode"] != true || pkv["do_remote_prefill"] != false {
				t.Errorf("producer request %v", pb)
			}
			if conn == "nixl" {
				// The fake producer returns no kv_transfer_params: the
				// consumer is not asked, and the row says why.
				if r.Status != results.StatusError || !strings.Contains(r.Reason, "returned no kv_transfer_params") || len(cons.requests) != 0 {
					t.Errorf("row %s %q, consumer requests %d", r.Status, r.Reason, len(cons.requests))
				}
				return
			}
			if len(cons.requests) != 1 {
				t.Fatalf("consumer got %d requests", len(cons.requests))
			}
			cb := cons.requests[0]
			if prod.ids[0] != cons.ids[0] || prod.ids[0] != "kvtier-1-remote-256-0" {
				t.Errorf("X-Request-Id producer %q consumer %q", prod.ids[0], cons.ids[0])
			}
			if fmt.Sprint(pb["prompt"]) != fmt.Sprint(cb["prompt"]) || pb["cache_salt"] != cb["cache_salt"] {
				t.Error("producer and consumer got different prompts")
			}
			switch conn {
			case "mooncake":
				// No bootstrap server answers GET /query at :8998: the
				// oldest shape.
				ckv, _ := cb["kv_transfer_params"].(map[string]any)
				if ckv["do_remote_prefill"] != true || ckv["bootstrap_server_port"] != 8998.0 || ckv["bootstrap_server_host"] != "127.0.0.1" || ckv["remote_bootstrap_addr"] != nil {
					t.Errorf("consumer params %v", ckv)
				}
				if r.Get("mooncake_shape") != MooncakeBootstrap {
					t.Errorf("mooncake_shape %q", r.Get("mooncake_shape"))
				}
				if r.Status != results.StatusOK || r.Get("verified") != "false" || r.Get("connector") != "mooncake" || r.Get("producer") != psrv.URL {
					t.Errorf("row %s %q verified=%s", r.Status, r.Reason, r.Get("verified"))
				}
			}
		})
	}
}

// cancelSink cancels the run after n rows.
type cancelSink struct {
	resultstest.Sink
	n      int
	cancel context.CancelFunc
}

func (c *cancelSink) Write(r results.Row) error {
	c.Sink.Write(r)
	if c.Len() == c.n {
		c.cancel()
	}
	return nil
}

func TestProbeInterrupted(t *testing.T) {
	_, srv := newFake(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p, err := New(ctx, testConfig(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	sink := &cancelSink{n: 1, cancel: cancel}
	if err := p.Run(ctx, sink); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if sink.Len() != 1 || sink.Rows()[0].Status != results.StatusOK {
		t.Errorf("rows kept: %d", sink.Len())
	}
}

// TestCheckGrain: a cpu row may fall short of a complete hit by the
// offload unit when it is larger than the block; other tiers by the block.
func TestCheckGrain(t *testing.T) {
	t.Parallel()
	p := &Prober{info: Info{BlockSize: 16, Offload: Offload{Grain: 256}}}
	u := &serving.Usage{PromptTokens: 4096}
	if c := p.check("cpu", serving.Request{}, u); c.Grain != 256 || c.L != 4096 {
		t.Errorf("cpu check %+v, want grain 256 of 4096 tokens", c)
	}
	if c := p.check("gpu", serving.Request{Prompt: make([]int, 4096)}, nil); c.Grain != 16 || c.L != 4096 {
		t.Errorf("gpu check %+v, want grain 16 of 4096 tokens", c)
	}
	// A connector that loads whole 256-token units serves 3840 of 4096.
	d := serving.Delta{ExtHits: 3840, ExtFound: true, HitsFound: true}
	if v := Verify(p.check("cpu", serving.Request{}, u), d, nil, u); !v.OK {
		t.Errorf("a complete hit in 256-token units: %+v", v)
	}
}

// TestOffloadFromServerInfo reads the offload store's size and unit out
// of GET /server_info bodies, JSON or a Python repr of the config.
func TestOffloadFromServerInfo(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, body string
		tokens, gr int
		what       string
	}{
		{"json blocks", `{"vllm_config": {"kv_transfer_config": {"kv_connector": "OffloadingConnector", "kv_connector_extra_config": {"num_cpu_blocks": 1000, "block_size": 64}}, "cache_config": {"block_size": 16}}}`, 64000, 64, "num_cpu_blocks"},
		{"repr bytes", `{"vllm_config": "... kv_transfer_config=KVTransferConfig(kv_connector='OffloadingConnector', kv_connector_extra_config={'cpu_bytes_to_use': 1048576000}) ..."}`, 1048576000 / 65536, 16, "cpu_bytes_to_use"},
		{"shorthand GiB", `{"vllm_config": {"kv_offloading_size": 2.0, "kv_transfer_config": null}}`, 2 << 30 / 65536, 16, "kv_offloading_size"},
		{"no connector", `{"vllm_config": {"cache_config": {"block_size": 16, "num_cpu_blocks": 5}}}`, 0, 0, ""},
	} {
		tokens, grain, what := offloadFromServerInfo(tt.body, 16, 65536)
		if tokens != tt.tokens || grain != tt.gr || what != tt.what {
			t.Errorf("%s: %d tokens, grain %d, %q; want %d, %d, %q", tt.name, tokens, grain, what, tt.tokens, tt.gr, tt.what)
		}
	}
}

// A hung engine (its API answers /v1/models, no generation ever ends)
// stops the probe after --max-timeouts consecutive timeouts: the rest are
// skipped rows, sent nothing, and Run says why.
func TestProbeCircuitBreaker(t *testing.T) {
	f := &fakeVLLM{blockSize: 16, cached: map[string]bool{}}
	var hung atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			f.ServeHTTP(w, r)
			return
		}
		hung.Add(1)
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL)
	cfg.Tiers, cfg.Prefixes, cfg.Reps, cfg.Timeout, cfg.MaxTimeouts = []string{"miss"}, []int{256, 512}, 3, 50*time.Millisecond, 3
	p := mustNew(t, cfg)
	var sink resultstest.Sink
	err := p.Run(t.Context(), &sink)
	if !errors.Is(err, serving.ErrTimeouts) {
		t.Fatalf("Run: %v, want the breaker's error", err)
	}
	rows := sink.Rows()
	if len(rows) != 6 || hung.Load() != 3 {
		t.Fatalf("%d rows, %d requests sent: want 6 rows, 3 sent", len(rows), hung.Load())
	}
	for i, r := range rows {
		want := results.StatusError
		if i >= 3 {
			want = results.StatusSkipped
		}
		if r.Status != want || (want == results.StatusSkipped && !strings.Contains(r.Reason, "3 consecutive requests")) {
			t.Errorf("row %d: %s %q, want %s", i, r.Status, r.Reason, want)
		}
	}
}
