package vllmsim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// complete posts a non-streaming completion and returns the decoded body.
func complete(t *testing.T, base string, body map[string]any, header map[string]string) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %v", resp.StatusCode, v)
	}
	return v
}

// counters returns the four prefix-cache counters.
func prefixCounters(t *testing.T, base string) (q, h, eq, eh float64) {
	mf := scrape(t, base)
	return value(t, mf, "vllm:prefix_cache_queries_total"), value(t, mf, "vllm:prefix_cache_hits_total"),
		value(t, mf, "vllm:external_prefix_cache_queries_total"), value(t, mf, "vllm:external_prefix_cache_hits_total")
}

func TestCPUOffloadHit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cpu         int
		wantExtHits float64
	}{
		{"with cpu offload", 1024, 496},
		{"without", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 64 GPU blocks hold 1024 tokens: three 512-token fillers
			// evict the 512-token prompt.
			_, base := newTestServer(t, Config{TimeScale: 0, GPUBlocks: 64, CPUBlocks: tc.cpu})
			prompt := promptWords(1, 512)
			complete(t, base, map[string]any{"prompt": prompt, "max_tokens": 1}, nil)
			for i := range 3 {
				complete(t, base, map[string]any{"prompt": promptWords(10+i, 512), "max_tokens": 1}, nil)
			}
			q0, h0, eq0, eh0 := prefixCounters(t, base)
			v := complete(t, base, map[string]any{"prompt": prompt, "max_tokens": 1}, nil)
			q1, h1, eq1, eh1 := prefixCounters(t, base)
			if q1-q0 != 512 || h1-h0 != 0 {
				t.Errorf("GPU prefix cache: queries +%v hits +%v, want +512 +0 (evicted)", q1-q0, h1-h0)
			}
			if eh1-eh0 != tc.wantExtHits {
				t.Errorf("external hits +%v, want +%v", eh1-eh0, tc.wantExtHits)
			}
			if tc.cpu > 0 && eq1-eq0 != 512 {
				t.Errorf("external queries +%v, want +512", eq1-eq0)
			}
			if tc.cpu == 0 && eq1-eq0 != 0 {
				t.Errorf("external queries +%v without a connector", eq1-eq0)
			}
			det, _ := v["usage"].(map[string]any)["prompt_tokens_details"].(map[string]any)
			if got, _ := det["cached_tokens"].(float64); got != tc.wantExtHits {
				t.Errorf("cached_tokens %v, want %v", got, tc.wantExtHits)
			}
		})
	}
}

func TestDisaggregatedPrefill(t *testing.T) {
	prod, pbase := newTestServer(t, Config{TimeScale: 0.01, Role: "producer", EngineID: "prod-0"})
	_, cbase := newTestServer(t, Config{TimeScale: 0.01, Role: "consumer", KVPeer: pbase})
	pu, _ := url.Parse(pbase)
	pport, _ := strconv.Atoi(pu.Port())
	prompt := promptWords(3, 1000)

	// The proxy's first leg, as vLLM's NIXL proxy sends it.
	pv := complete(t, pbase, map[string]any{
		"prompt": prompt, "max_tokens": 1, "stream": false,
		"kv_transfer_params": map[string]any{
			"do_remote_decode": true, "do_remote_prefill": false,
			"remote_engine_id": nil, "remote_block_ids": nil, "remote_host": nil, "remote_port": nil,
		},
	}, map[string]string{"X-Request-Id": "pd-1"})
	kvp, _ := pv["kv_transfer_params"].(map[string]any)
	if kvp == nil {
		t.Fatalf("producer returned no kv_transfer_params: %v", pv)
	}
	ids, _ := kvp["remote_block_ids"].([]any)
	if kvp["do_remote_prefill"] != true || kvp["do_remote_decode"] != false || len(ids) != 63 ||
		kvp["remote_engine_id"] != "prod-0" || kvp["remote_host"] != "127.0.0.1" || kvp["remote_port"] != float64(pport) ||
		kvp["tp_size"] != 1.0 || kvp["remote_request_id"] != "cmpl-pd-1" {
		t.Fatalf("producer kv_transfer_params %v", kvp)
	}
	if u := value(t, scrape(t, pbase), "vllm:kv_cache_usage_perc"); u <= 0 {
		t.Errorf("producer usage %v while holding KV for the consumer", u)
	}

	// The second leg: the consumer pulls the blocks.
	_, h0, _, eh0 := prefixCounters(t, cbase)
	cv := complete(t, cbase, map[string]any{"prompt": prompt, "max_tokens": 3, "kv_transfer_params": kvp},
		map[string]string{"X-Request-Id": "pd-1"})
	_, h1, _, eh1 := prefixCounters(t, cbase)
	if eh1-eh0 != 992 || h1-h0 != 0 {
		t.Errorf("consumer: external hits +%v, local hits +%v; want +992, +0", eh1-eh0, h1-h0)
	}
	if u := cv["usage"].(map[string]any); u["completion_tokens"] != 3.0 {
		t.Errorf("consumer usage %v", u)
	}
	if u := value(t, scrape(t, pbase), "vllm:kv_cache_usage_perc"); u != 0 {
		t.Errorf("producer usage %v after the consumer took the KV", u)
	}
	prod.eng.mu.Lock()
	held := len(prod.eng.held)
	prod.eng.mu.Unlock()
	if held != 0 {
		t.Errorf("producer still holds %d transfers", held)
	}

	// The same params again: the producer no longer holds those blocks,
	// so a new prompt behind them is a miss.
	_, _, eq0, eh0 := prefixCounters(t, cbase)
	complete(t, cbase, map[string]any{"prompt": promptWords(4, 500), "max_tokens": 1, "kv_transfer_params": kvp}, nil)
	_, _, eq1, eh1 := prefixCounters(t, cbase)
	if eh1-eh0 != 0 || eq1-eq0 != 500 {
		t.Errorf("stale params: external hits +%v queries +%v, want +0 +500", eh1-eh0, eq1-eq0)
	}

	// Mooncake's shape: the consumer knows only the bootstrap address and
	// the shared X-Request-Id.
	prompt = promptWords(5, 800)
	complete(t, pbase, map[string]any{"prompt": prompt, "max_tokens": 1,
		"kv_transfer_params": map[string]any{"do_remote_decode": true}}, map[string]string{"X-Request-Id": "mc-1"})
	_, _, _, eh0 = prefixCounters(t, cbase)
	complete(t, cbase, map[string]any{"prompt": prompt, "max_tokens": 1, "kv_transfer_params": map[string]any{
		"do_remote_decode": false, "do_remote_prefill": true, "remote_bootstrap_addr": pu.Host,
	}}, map[string]string{"X-Request-Id": "mc-1"})
	_, _, _, eh1 = prefixCounters(t, cbase)
	if eh1-eh0 != 784 {
		t.Errorf("mooncake shape: external hits +%v, want +784", eh1-eh0)
	}
}

// A streaming decode is stalled by a 32k prefill on the same server, in
// real modeled time on the virtual clock.
func TestServerDecodeStallsDuringPrefill(t *testing.T) {
	inBubble(t, func(t *testing.T, net *MemNet) {
		_, base := memServer(t, net, "sim", Config{TimeScale: 1, GPUBlocks: 4096})
		c := net.Client()
		b, _ := json.Marshal(map[string]any{"prompt": promptWords(1, 64), "max_tokens": 3000, "stream": true, "ignore_eos": true})
		resp, err := c.Post(base+"/v1/completions", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var mu sync.Mutex
		var arrivals []time.Time
		started := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: {") {
					mu.Lock()
					arrivals = append(arrivals, time.Now())
					if len(arrivals) == 200 {
						close(started)
					}
					mu.Unlock()
				}
			}
		}()
		<-started
		ids := make([]int, 32768)
		for i := range ids {
			ids[i] = 1000 + i
		}
		inject := time.Now()
		b, _ = json.Marshal(map[string]any{"prompt": ids, "max_tokens": 1})
		pr, err := c.Post(base+"/v1/completions", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, pr.Body)
		pr.Body.Close()
		done := time.Now()
		time.Sleep(100 * time.Millisecond)
		resp.Body.Close()
		mu.Lock()
		defer mu.Unlock()
		var before []time.Duration
		var worst time.Duration
		for i := 1; i < len(arrivals); i++ {
			g := arrivals[i].Sub(arrivals[i-1])
			switch {
			case arrivals[i].Before(inject):
				before = append(before, g)
			case arrivals[i-1].Before(done):
				worst = max(worst, g)
			}
		}
		slices.Sort(before)
		base50 := before[len(before)/2]
		// Modeled: 4.8 ms steps against a 4.6 s prefill the decode waits for.
		if base50 < 4700*time.Microsecond || base50 > 4900*time.Microsecond || worst < 4*time.Second {
			t.Errorf("median gap before the prefill %v (want 4.79 ms), largest across it %v (want > 4 s)", base50, worst)
		}
		t.Logf("median gap before %v, largest across the prefill %v, prefill took %v", base50, worst, done.Sub(inject))
	})
}

func TestParseKVParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]any
		want kvParams
	}{
		{"nixl producer leg", map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "remote_block_ids": nil},
			kvParams{doRemoteDecode: true}},
		{"nixl consumer leg", map[string]any{"do_remote_prefill": true, "remote_block_ids": []any{3.0, 4.0},
			"remote_engine_id": "e", "remote_host": "127.0.0.1", "remote_port": 8100.0, "remote_request_id": "cmpl-x"},
			kvParams{doRemotePrefill: true, blockIDs: []int{3, 4}, hasBlockIDs: true, engineID: "e", host: "127.0.0.1", port: 8100, requestID: "cmpl-x"}},
		{"mooncake, older", map[string]any{"do_remote_prefill": true, "bootstrap_server_host": "10.0.0.2", "bootstrap_server_port": 8998.0},
			kvParams{doRemotePrefill: true, host: "10.0.0.2", port: 8998}},
		{"mooncake, engine id", map[string]any{"do_remote_prefill": true, "remote_bootstrap_addr": "http://10.0.0.3:8999", "remote_engine_id": "m", "remote_dp_rank": 0.0},
			kvParams{doRemotePrefill: true, host: "10.0.0.3", port: 8999, engineID: "m"}},
		{"mooncake, transfer id", map[string]any{"do_remote_prefill": true, "remote_bootstrap_addr": "http://[::1]:8998", "remote_engine_id": "m", "transfer_id": "xfer-1"},
			kvParams{doRemotePrefill: true, host: "::1", port: 8998, engineID: "m", transferID: "xfer-1"}},
		{"mooncake producer leg", map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "transfer_id": "xfer-2"},
			kvParams{doRemoteDecode: true, transferID: "xfer-2"}},
	} {
		got := parseKVParams(tc.in)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
