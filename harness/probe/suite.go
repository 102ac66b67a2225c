package probe

import (
	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// File is probe.csv.
const File = "probe.csv"

// columns follow results.CommonSchema in probe.csv (backend "http",
// transport "http", tier miss | gpu | cpu | remote, seconds = TTFT).
var columns = []results.Column{
	results.EndpointColumn,
	results.Text("producer", "remote tier: instance A, the server that computed the KV"),
	results.Text("connector", "remote tier: nixl | mooncake"),
	results.SimulatedColumn,
	results.RequestIDColumn,
	results.Int("http_status", "", "the HTTP status of the request"),
	results.Float(results.ColTTFT, "s", "time to the first token (vllm bench: the first choice chunk)"),
	results.Float("e2e_s", "s", "time to the last chunk"),
	results.PromptTokensColumn,
	results.Int("completion_tokens", "tokens", "output tokens as the server reported them (usage)"),
	results.Int("cached_tokens", "tokens", `usage.prompt_tokens_details.cached_tokens or llama.cpp timings.cache_n; "" absent`),
	results.Int("hit_tokens", "tokens", "delta of the server's prefix_cache_hits over the request"),
	results.Int("external_hit_tokens", "tokens", "delta of external_prefix_cache_hits over the request"),
	results.Bool(results.ColVerified, "whether the server's counters confirmed the tier (a miss: did not contradict it)"),
	results.Text(results.ColVerifyReason, "why the row is not verified"),
	results.APIColumn,
	results.ServerVersionColumn,
	results.Text("counter_generation", "what the server's counters mean (probe.Generation): e.g. queried+by_source"),
	results.Text("verified_by", "the counter that decided: prompt_tokens_cached_by_source, prompt_tokens_by_source, ..., or server_log (the server's log, --server-log)"),
	results.Text("source_tokens", `delta of prompt_tokens_(cached_)by_source per source, "local_compute=16,..."`),
	results.Int("grain_tokens", "tokens", "a complete hit may fall short by this: the block, or the offload unit"),
	results.Int("cpu_capacity_tokens", "tokens", "cpu tier: the CPU store's size where known"),
	results.Int("evict_tokens", "tokens", "cpu tier: filler tokens sent to evict the GPU cache"),
	results.Text("mooncake_shape", "remote tier, mooncake: bootstrap | engine | transfer"),
	results.Float("tpot_s", "s", "vllm bench's TPOT: (latency − TTFT) / (output tokens − 1)"),
	results.Float("itl_mean_s", "s", "mean gap between chunks"),
	results.PromptFormColumn,
	results.ServerFamilyColumn,
	results.CachedSourceColumn,
	results.ServerCheckColumn,
	results.Float(results.ColSimLag, "s", `kvtier sim only: the most it fell behind real time during the row (kvtier_sim_lag_since_seconds of the scrape before it); past 10 % of ttft_s the row is unverified, left out of the summaries`),
}

// Suite declares the probe's results.
var Suite = results.Suite{
	Name: "probe", Title: "HTTP four-tier TTFT", Command: "kvtier probe", Order: 20,
	Files: []results.File{{
		Name: File, Columns: columns, Keys: []string{results.ColTier, results.ColPrefixTokens, results.ColEndpoint},
		Match: []string{results.ColTier, results.ColPrefixTokens, results.ColSimulated}, Metric: "TTFT", Value: results.ColTTFT, Counts: analysis.ProbeCounted,
	}},
}

func init() { results.RegisterSuite(Suite) }
