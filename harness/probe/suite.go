package probe

import (
	"github.com/kvtier/kvtier/results"
)

// File is probe.csv.
const File = "probe.csv"

// columns follow results.CommonSchema in probe.csv (backend "http",
// transport "http", tier miss | gpu | cpu | remote, seconds = TTFT).
var columns = []results.Column{
	results.Text(results.ColEndpoint, "the server's base URL (credentials redacted)"),
	results.Text("producer", "remote tier: instance A, the server that computed the KV"),
	results.Text("connector", "remote tier: nixl | mooncake"),
	results.Bool(results.ColSimulated, "true when the server said it is kvtier sim"),
	results.Text("request_id", "the X-Request-Id sent"),
	results.Int("http_status", "", "the HTTP status of the request"),
	results.Float(results.ColTTFT, "s", "time to the first token (vllm bench: the first choice chunk)"),
	results.Float("e2e_s", "s", "time to the last chunk"),
	results.Int("prompt_tokens", "tokens", "the prompt's tokens as the server reported them (usage)"),
	results.Int("completion_tokens", "tokens", "output tokens as the server reported them (usage)"),
	results.Int("cached_tokens", "tokens", `usage.prompt_tokens_details.cached_tokens or llama.cpp timings.cache_n; "" absent`),
	results.Int("hit_tokens", "tokens", "delta of the server's prefix_cache_hits over the request"),
	results.Int("external_hit_tokens", "tokens", "delta of external_prefix_cache_hits over the request"),
	results.Bool(results.ColVerified, "whether the server's counters confirmed the tier (a miss: did not contradict it)"),
	results.Text(results.ColVerifyReason, "why the row is not verified"),
	results.Text("api", "completions | chat"),
	results.Text("server_version", `GET /version, "" unknown`),
	results.Text("counter_generation", "what the server's counters mean (probe.Generation): e.g. queried+by_source"),
	results.Text("verified_by", "the counter that decided: prompt_tokens_cached_by_source, prompt_tokens_by_source, ..."),
	results.Text("source_tokens", `delta of prompt_tokens_(cached_)by_source per source, "local_compute=16,..."`),
	results.Int("grain_tokens", "tokens", "a complete hit may fall short by this: the block, or the offload unit"),
	results.Int("cpu_capacity_tokens", "tokens", "cpu tier: the CPU store's size where known"),
	results.Int("evict_tokens", "tokens", "cpu tier: filler tokens sent to evict the GPU cache"),
	results.Text("mooncake_shape", "remote tier, mooncake: bootstrap | engine | transfer"),
	results.Float("tpot_s", "s", "vllm bench's TPOT: (latency − TTFT) / (output tokens − 1)"),
	results.Float("itl_mean_s", "s", "mean gap between chunks"),
	results.Text("prompt_form", "token_ids | text | chat: the form the prompt went in"),
	results.Text("server_family", "vllm | sglang | llamacpp | ollama | tgi | trtllm | openai (docs/servers.md)"),
	results.Text("cached_source", "where cached_tokens came from: usage.prompt_tokens_details.cached_tokens | timings.cache_n"),
}

// Counted says whether an ok probe row's TTFT is a measurement of its
// tier: a hit whose tier the server's counters confirmed, or a miss they
// did not contradict.
func Counted(r results.Row) bool {
	if r.Status != results.StatusOK {
		return false
	}
	v := r.Get(results.ColVerified)
	if r.Tier == "miss" {
		return v != "false"
	}
	return v == "true"
}

// Suite declares the probe's results.
var Suite = results.Suite{
	Name: "probe", Title: "HTTP four-tier TTFT", Command: "kvtier probe", Order: 20,
	Files: []results.File{{
		Name: File, Columns: columns, Keys: []string{results.ColTier, results.ColPrefixTokens, results.ColEndpoint},
		Match: []string{results.ColTier, results.ColPrefixTokens, results.ColSimulated}, Metric: "TTFT", Value: results.ColTTFT, Counts: Counted,
	}},
}

func init() { results.RegisterSuite(Suite) }
