package vllmsim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// newSim makes a simulator of cfg, with 2048 GPU blocks unless cfg says
// otherwise, that is closed when the test ends.
func newSim(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.GPUBlocks == 0 {
		cfg.GPUBlocks = 2048
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newTestServer starts a simulator behind httptest with small pools.
func newTestServer(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "qwen3-coder-30b-a3b"
	}
	cfg.EnablePromptTokensDetails = true
	s := newSim(t, cfg)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// words returns a prompt of n distinct-ish words starting at seed.
func promptWords(seed, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "w%d_%d ", seed, i)
	}
	return b.String()
}

// streamResult is what a client sees of one streamed request.
type streamResult struct {
	ttft    time.Duration
	arrival []time.Duration // per token chunk, since the POST
	text    string
	finish  string
	usage   map[string]any
	done    bool
}

// streamCompletion posts body with stream on and reads the SSE stream
// with a plain net/http client.
func streamCompletion(t *testing.T, url string, body map[string]any) streamResult {
	t.Helper()
	body["stream"] = true
	body["stream_options"] = map[string]any{"include_usage": true}
	b, _ := json.Marshal(body)
	start := time.Now()
	resp, err := clientOf(url).Post(url+"/v1/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, msg)
	}
	if resp.Header.Get("X-Kvtier-Simulated") != "1" {
		t.Errorf("missing X-Kvtier-Simulated header")
	}
	var res streamResult
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if data == "[DONE]" {
			res.done = true
			break
		}
		var chunk struct {
			Object  string `json:"object"`
			Choices []struct {
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if chunk.Object != "text_completion" {
			t.Errorf("object %q", chunk.Object)
		}
		if len(chunk.Choices) == 0 {
			res.usage = chunk.Usage
			continue
		}
		now := time.Since(start)
		if res.ttft == 0 {
			res.ttft = now
		}
		res.arrival = append(res.arrival, now)
		res.text += chunk.Choices[0].Text
		if f := chunk.Choices[0].FinishReason; f != nil {
			res.finish = *f
		}
	}
	return res
}

// scrape reads /metrics and parses it with expfmt.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := clientOf(url).Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mf
}

// value returns the value of the single series of family name.
func value(t *testing.T, mf map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f, ok := mf[name]
	if !ok || len(f.Metric) != 1 {
		t.Fatalf("metric %s missing or not one series", name)
	}
	m := f.Metric[0]
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("metric %s: not a counter or gauge", name)
	return 0
}

func TestStreamPrefixHit(t *testing.T) {
	inBubble(t, testStreamPrefixHit)
}

// testStreamPrefixHit runs on the virtual clock, in real modeled time.
func testStreamPrefixHit(t *testing.T, net *MemNet) {
	_, url := memServer(t, net, "sim", Config{TimeScale: 1, Seed: 1, GPUBlocks: 2048, Model: "qwen3-coder-30b-a3b", EnablePromptTokensDetails: true})
	const n = 8000 // 500 blocks exactly: hits stop one block short
	body := func() map[string]any {
		return map[string]any{"model": "qwen3-coder-30b-a3b", "prompt": promptWords(1, n), "max_tokens": 4, "ignore_eos": true}
	}
	m0 := scrape(t, url)
	first := streamCompletion(t, url, body())
	m1 := scrape(t, url)
	second := streamCompletion(t, url, body())
	m2 := scrape(t, url)

	for i, r := range []streamResult{first, second} {
		// Four tokens, one word each, in as many chunks as the stream
		// needed (it may bundle them when it falls behind the engine).
		if !r.done || r.finish != "length" || len(strings.Fields(r.text)) != 4 {
			t.Fatalf("request %d: done %v finish %q text %q", i, r.done, r.finish, r.text)
		}
		if got := r.usage["prompt_tokens"]; got != float64(n) {
			t.Errorf("request %d: prompt_tokens %v, want %d", i, got, n)
		}
	}
	if first.text != second.text {
		t.Errorf("same prompt, different text: %q vs %q", first.text, second.text)
	}
	if _, ok := first.usage["prompt_tokens_details"]; ok {
		t.Errorf("first request has prompt_tokens_details %v; vLLM omits it with nothing cached", first.usage)
	}
	det, _ := second.usage["prompt_tokens_details"].(map[string]any)
	if det["cached_tokens"] != float64(n-16) {
		t.Errorf("second request cached_tokens %v, want %d", det["cached_tokens"], n-16)
	}
	q := func(m map[string]*dto.MetricFamily) float64 { return value(t, m, "vllm:prefix_cache_queries_total") }
	h := func(m map[string]*dto.MetricFamily) float64 { return value(t, m, "vllm:prefix_cache_hits_total") }
	if d := q(m1) - q(m0); d != n {
		t.Errorf("queries rose by %v on the first request, want %d", d, n)
	}
	if d := h(m1) - h(m0); d != 0 {
		t.Errorf("hits rose by %v on the first request, want 0", d)
	}
	if d := h(m2) - h(m1); d != n-16 {
		t.Errorf("hits rose by %v on the repeat, want %d (block granularity, last token recomputed)", d, n-16)
	}
	if d := value(t, m2, "vllm:generation_tokens_total") - value(t, m0, "vllm:generation_tokens_total"); d != 8 {
		t.Errorf("generation tokens rose by %v, want 8", d)
	}
	if value(t, m2, "kvtier_simulated") != 1 {
		t.Errorf("kvtier_simulated is not 1")
	}
	if hist := m2["vllm:time_to_first_token_seconds"]; hist == nil || hist.Metric[0].Histogram.GetSampleCount() != 2 {
		t.Errorf("TTFT histogram does not hold 2 samples: %v", hist)
	}
	// Modeled: miss about 0.6 s, hit about 0.05 s.
	if second.ttft >= first.ttft/5 {
		t.Errorf("repeat TTFT %v not far below first %v", second.ttft, first.ttft)
	}
	t.Logf("TTFT miss %v, hit %v (virtual clock)", first.ttft, second.ttft)
}

func TestMetricsShape(t *testing.T) {
	_, url := newTestServer(t, Config{TimeScale: 0, CPUBlocks: 64})
	mf := scrape(t, url)
	want := map[string]dto.MetricType{
		"vllm:num_requests_running":                dto.MetricType_GAUGE,
		"vllm:num_requests_waiting":                dto.MetricType_GAUGE,
		"vllm:kv_cache_usage_perc":                 dto.MetricType_GAUGE,
		"vllm:prefix_cache_queries_total":          dto.MetricType_COUNTER,
		"vllm:prefix_cache_hits_total":             dto.MetricType_COUNTER,
		"vllm:external_prefix_cache_queries_total": dto.MetricType_COUNTER,
		"vllm:external_prefix_cache_hits_total":    dto.MetricType_COUNTER,
		"vllm:prompt_tokens_total":                 dto.MetricType_COUNTER,
		"vllm:generation_tokens_total":             dto.MetricType_COUNTER,
		"vllm:prompt_tokens_created":               dto.MetricType_GAUGE,
		"vllm:time_to_first_token_seconds":         dto.MetricType_HISTOGRAM,
		"vllm:cache_config_info":                   dto.MetricType_GAUGE,
		"kvtier_simulated":                         dto.MetricType_GAUGE,
		"kvtier_sim_lag_seconds":                   dto.MetricType_GAUGE,
		"kvtier_sim_scrape":                        dto.MetricType_GAUGE,
		"kvtier_sim_host_store_gbps":               dto.MetricType_GAUGE,
	}
	for name, typ := range want {
		f, ok := mf[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s: type %v, want %v", name, f.GetType(), typ)
		}
		if name == "kvtier_simulated" || name == "vllm:cache_config_info" {
			continue
		}
		labels := map[string]string{}
		for _, l := range f.Metric[0].Label {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["model_name"] != "qwen3-coder-30b-a3b" || labels["engine"] != "0" {
			t.Errorf("%s: labels %v", name, labels)
		}
		if name == "kvtier_sim_host_store_gbps" && (labels["assumed"] != "true" || f.Metric[0].GetGauge().GetValue() != h20.HostStoreGBps) {
			t.Errorf("%s: %v %v: want h20's store rate, labelled assumed", name, labels, f.Metric[0].GetGauge().GetValue())
		}
	}
	info := map[string]string{}
	for _, l := range mf["vllm:cache_config_info"].Metric[0].Label {
		info[l.GetName()] = l.GetValue()
	}
	if info["block_size"] != "16" || info["num_gpu_blocks"] != "2048" || info["num_cpu_blocks"] != "64" || info["enable_prefix_caching"] != "True" {
		t.Errorf("cache_config_info labels %v", info)
	}
	h := mf["vllm:time_to_first_token_seconds"].Metric[0].Histogram
	if len(h.Bucket) != len(ttftBuckets)+1 || h.Bucket[0].GetUpperBound() != 0.001 {
		t.Errorf("TTFT buckets %v", h.Bucket)
	}
}

func TestModelsAndHealth(t *testing.T) {
	_, url := newTestServer(t, Config{TimeScale: 0, MaxModelLen: 4096})
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) != 0 {
		t.Errorf("/health: %d %q", resp.StatusCode, b)
	}
	resp, err = http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			OwnedBy     string `json:"owned_by"`
			Root        string `json:"root"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 1 {
		t.Fatalf("models %+v", list)
	}
	d := list.Data[0]
	if d.ID != "qwen3-coder-30b-a3b" || d.Object != "model" || d.OwnedBy != "vllm" || d.Root != d.ID || d.MaxModelLen != 4096 {
		t.Errorf("model card %+v", d)
	}
}

func post(t *testing.T, url, path, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s: body is not JSON: %v", path, err)
	}
	return resp.StatusCode, v
}

func TestErrors(t *testing.T) {
	_, url := newTestServer(t, Config{TimeScale: 0, MaxModelLen: 1000})
	long := promptWords(2, 1000)
	for _, tc := range []struct {
		name, path, body string
		status           int
		typ              string
	}{
		{"malformed JSON", "/v1/completions", `{"prompt": "a b`, 400, "BadRequestError"},
		{"missing prompt", "/v1/completions", `{"max_tokens": 3}`, 400, "BadRequestError"},
		{"negative max_tokens", "/v1/completions", `{"prompt": "a b", "max_tokens": -1}`, 400, "BadRequestError"},
		{"prompt over max-model-len", "/v1/completions", `{"prompt": "` + long + `"}`, 400, "BadRequestError"},
		{"prompt + max_tokens over", "/v1/completions", `{"prompt": "a b c", "max_tokens": 998}`, 400, "BadRequestError"},
		{"two prompts", "/v1/completions", `{"prompt": ["a", "b"]}`, 400, "BadRequestError"},
		{"token out of vocabulary", "/v1/completions", `{"prompt": [1, -5]}`, 400, "BadRequestError"},
		{"empty prompt", "/v1/completions", `{"prompt": ""}`, 400, "BadRequestError"},
		{"unknown model", "/v1/completions", `{"model": "gpt-9", "prompt": "a"}`, 404, "NotFoundError"},
		{"chat without messages", "/v1/chat/completions", `{"max_tokens": 2}`, 400, "BadRequestError"},
		{"chat malformed", "/v1/chat/completions", `[1,2`, 400, "BadRequestError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, v := post(t, url, tc.path, tc.body)
			if status != tc.status {
				t.Errorf("status %d, want %d (%v)", status, tc.status, v)
			}
			e, _ := v["error"].(map[string]any)
			if e == nil || e["type"] != tc.typ || e["code"] != float64(tc.status) || e["message"] == "" {
				t.Errorf("error body %v", v)
			}
			if _, ok := e["param"]; !ok {
				t.Errorf("error body has no param: %v", v)
			}
		})
	}
	// Still serving.
	status, v := post(t, url, "/v1/completions", `{"prompt": "a b c", "max_tokens": 2}`)
	if status != 200 {
		t.Fatalf("after errors: %d %v", status, v)
	}
	choices := v["choices"].([]any)
	if c := choices[0].(map[string]any); c["finish_reason"] != "length" {
		t.Errorf("choice %v", c)
	}
	u := v["usage"].(map[string]any)
	if u["prompt_tokens"] != 3.0 || u["completion_tokens"] != 2.0 || u["total_tokens"] != 5.0 {
		t.Errorf("usage %v", u)
	}
}

// inBubble runs f in a synctest bubble, where time is virtual, with an
// in-memory network for simulated servers.
func inBubble(t *testing.T, f func(t *testing.T, net *MemNet)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		var net MemNet
		defer net.Close()
		f(t, &net)
	})
}

// memServer starts a simulator on net under host; the helpers that take
// its URL reach it with the network's client.
func memServer(t *testing.T, net *MemNet, host string, cfg Config) (*Server, string) {
	t.Helper()
	s, url, err := net.Start(cfg, host)
	if err != nil {
		t.Fatal(err)
	}
	memClients.Store(url, net.Client())
	t.Cleanup(func() {
		memClients.Delete(url)
		s.Close()
	})
	return s, url
}

// memClients are the clients of in-memory servers, by base URL.
var memClients sync.Map

// clientOf returns the client that reaches url.
func clientOf(url string) *http.Client {
	if c, ok := memClients.Load(url); ok {
		return c.(*http.Client)
	}
	return http.DefaultClient
}

// postRaw posts body to url+path with client and returns the raw body.
func postRaw(t *testing.T, c *http.Client, url, path, body string) string {
	t.Helper()
	resp, err := c.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return string(raw)
}

// TestChat streams a chat completion in real modeled time (virtual
// clock): the stream keeps up with the engine, so one chunk per token.
func TestChat(t *testing.T) {
	inBubble(t, func(t *testing.T, net *MemNet) {
		_, url := memServer(t, net, "sim", Config{TimeScale: 1})
		body := `{"messages": [{"role": "user", "content": "hello there"}], "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true}}`
		checkChatStream(t, postRaw(t, net.Client(), url, "/v1/chat/completions", body))
	})
}

func checkChatStream(t *testing.T, raw string) {
	t.Helper()
	events := strings.Split(strings.TrimSuffix(raw, "\n\n"), "\n\n")
	// role chunk, 3 content chunks, usage chunk, [DONE]
	if len(events) != 6 || events[5] != "data: [DONE]" {
		t.Fatalf("events %q", events)
	}
	var chunks []map[string]any
	for _, ev := range events[:5] {
		var c map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &c); err != nil {
			t.Fatal(err)
		}
		if c["object"] != "chat.completion.chunk" || !strings.HasPrefix(c["id"].(string), "chatcmpl-") {
			t.Errorf("chunk %v", c)
		}
		chunks = append(chunks, c)
	}
	delta := func(i int) map[string]any {
		return chunks[i]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	}
	if delta(0)["role"] != "assistant" || delta(0)["content"] != "" {
		t.Errorf("first delta %v", delta(0))
	}
	if fr := chunks[3]["choices"].([]any)[0].(map[string]any)["finish_reason"]; fr != "length" {
		t.Errorf("last token chunk finish_reason %v", fr)
	}
	if len(chunks[4]["choices"].([]any)) != 0 {
		t.Errorf("usage chunk has choices")
	}
	u := chunks[4]["usage"].(map[string]any)
	// <|im_start|> user hello there <|im_end|> <|im_start|> assistant
	if u["prompt_tokens"] != 7.0 || u["completion_tokens"] != 3.0 {
		t.Errorf("usage %v", u)
	}
}

func TestStartAndClose(t *testing.T) {
	s, err := New(Config{TimeScale: 0})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	url, err := s.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	s.Close()
	if _, err := http.Get(url + "/health"); err == nil {
		t.Errorf("still serving after Close")
	}
}

func TestSeedFixesTokens(t *testing.T) {
	text := func(seed int64) string {
		_, url := newTestServer(t, Config{TimeScale: 0, Seed: seed})
		_, v := post(t, url, "/v1/completions", `{"prompt": "one two three", "max_tokens": 8}`)
		return v["choices"].([]any)[0].(map[string]any)["text"].(string)
	}
	a, b, c := text(1), text(1), text(2)
	if a != b {
		t.Errorf("same seed, different text: %q %q", a, b)
	}
	if a == c {
		t.Errorf("seeds 1 and 2 gave the same text %q", a)
	}
}

func TestClientGoneFreesBlocks(t *testing.T) {
	s, url := newTestServer(t, Config{TimeScale: 0.01})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions",
		strings.NewReader(`{"prompt": "`+promptWords(1, 300)+`", "max_tokens": 30000, "stream": true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if v := value(t, scrape(t, url), "vllm:num_requests_running"); v != 1 {
		t.Errorf("running %v while streaming", v)
	}
	cancel()
	resp.Body.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.eng.mu.Lock()
		running, used := len(s.eng.running), s.eng.gpu.used()
		s.eng.mu.Unlock()
		if running == 0 && used == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the client left: %d running, %d blocks in use", running, used)
		}
	}
}

func TestContinuousUsage(t *testing.T) {
	inBubble(t, func(t *testing.T, net *MemNet) {
		_, url := memServer(t, net, "sim", Config{TimeScale: 1})
		body := `{"prompt": "a b c", "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true, "continuous_usage_stats": true}}`
		checkContinuousUsage(t, postRaw(t, net.Client(), url, "/v1/completions", body))
	})
}

func checkContinuousUsage(t *testing.T, raw string) {
	t.Helper()
	var got []string
	for ev := range strings.SplitSeq(strings.TrimSpace(raw), "\n\n") {
		data := strings.TrimPrefix(ev, "data: ")
		if data == "[DONE]" {
			continue
		}
		var c struct {
			Usage struct {
				Completion int `json:"completion_tokens"`
				Total      int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d/%d", c.Usage.Completion, c.Usage.Total))
	}
	if want := "1/4 2/5 3/6 3/6"; strings.Join(got, " ") != want {
		t.Errorf("usage per chunk %v, want %s", got, want)
	}
}

// TestBundledChunks: a stream that falls behind the engine (time scale 0:
// every step is done before the handler writes) gets several tokens per
// chunk, as vLLM merges pending outputs; continuous usage and token_ids
// still account for every token.
func TestBundledChunks(t *testing.T) {
	_, url := newTestServer(t, Config{TimeScale: 0})
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		body := `{"prompt": "a b c", "messages": [{"role": "user", "content": "a b c"}], "max_tokens": 40, "stream": true, "return_token_ids": true,
			"stream_options": {"include_usage": true, "continuous_usage_stats": true}}`
		raw := postRaw(t, http.DefaultClient, url, path, body)
		chunks, ids, prev := 0, 0, 0
		for ev := range strings.SplitSeq(strings.TrimSpace(raw), "\n\n") {
			data := strings.TrimPrefix(ev, "data: ")
			if data == "[DONE]" {
				continue
			}
			var c struct {
				Choices []struct {
					TokenIDs []int `json:"token_ids"`
				} `json:"choices"`
				PromptTokenIDs []int `json:"prompt_token_ids"`
				Usage          struct {
					Completion int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatal(err)
			}
			if len(c.Choices) == 0 {
				continue
			}
			if chunks == 0 && len(c.PromptTokenIDs) == 0 {
				t.Errorf("%s: first chunk has no prompt_token_ids", path)
			}
			chunks++
			n := len(c.Choices[0].TokenIDs)
			ids += n
			if c.Usage.Completion-prev != n {
				t.Errorf("%s: chunk %d carries %d token ids but completion_tokens rose by %d", path, chunks, n, c.Usage.Completion-prev)
			}
			prev = c.Usage.Completion
		}
		if ids != 40 || prev != 40 {
			t.Errorf("%s: %d token ids, completion_tokens %d; want 40", path, ids, prev)
		}
		if chunks >= 40 {
			t.Errorf("%s: %d chunks for 40 tokens: nothing was bundled", path, chunks)
		}
	}
}

// TestRequestOutgrowingThePool checks that a request whose prompt and
// max_tokens need more blocks than the whole pool is refused up front:
// admitted, it would preempt itself for ever once it outgrew the pool.
func TestRequestOutgrowingThePool(t *testing.T) {
	_, url := newTestServer(t, Config{TimeScale: 0, GPUBlocks: 4, BlockSize: 16})
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = strconv.Itoa(100 + i)
	}
	prompt := "[" + strings.Join(ids, ",") + "]"
	for _, tc := range []struct {
		maxTokens, status int
	}{{24, 200}, {25, 400}} { // 40 + 24 tokens fill the 4 blocks; one more needs a fifth
		status, v := post(t, url, "/v1/completions", fmt.Sprintf(`{"prompt": %s, "max_tokens": %d}`, prompt, tc.maxTokens))
		if status != tc.status {
			t.Errorf("max_tokens %d: status %d, want %d (%v)", tc.maxTokens, status, tc.status, v)
		}
	}
}

// TestCloseEndsRequests checks that Close ends a request that is still
// in the simulated front end's delay or streaming, even behind a server
// Start did not make (httptest here): request contexts end with the
// simulator.
func TestCloseEndsRequests(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		s, url := newTestServer(t, Config{TimeScale: 10000})
		done := make(chan error, 1)
		go func() {
			body := fmt.Sprintf(`{"prompt": %q, "max_tokens": 30000, "stream": %v}`, promptWords(1, 300), stream)
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done <- err
		}()
		time.Sleep(200 * time.Millisecond)
		s.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("stream=%v: a request outlived Close by 10 s", stream)
		}
	}
}
