package probe

import (
	"github.com/kvtier/kvtier/results"
)

// File is probe.csv.
const File = "probe.csv"

// columns follow results.CommonColumns in probe.csv (backend "http",
// transport "http", tier miss | gpu | cpu | remote, seconds = TTFT).
var columns = []string{
	"endpoint",
	"producer",  // remote tier: instance A
	"connector", // nixl | mooncake
	"simulated", // true when the server said it is kvtier sim
	"request_id",
	"http_status",
	"ttft_s",
	"e2e_s",
	"prompt_tokens",
	"completion_tokens",
	"cached_tokens",       // usage.prompt_tokens_details.cached_tokens or llama.cpp timings.cache_n, "" absent
	"hit_tokens",          // delta of prefix_cache_hits over the request
	"external_hit_tokens", // delta of external_prefix_cache_hits
	"verified",            // true | false
	"verify_reason",       // why not verified
	// Added by issue 13.
	"api",                 // completions | chat
	"server_version",      // GET /version, "" unknown
	"counter_generation",  // what the server's counters mean (probe.Generation): e.g. queried+by_source
	"verified_by",         // the counter that decided: prompt_tokens_cached_by_source, prompt_tokens_by_source, ...
	"source_tokens",       // delta of prompt_tokens_(cached_)by_source per source, "local_compute=16,..."
	"grain_tokens",        // a complete hit may fall short by this: the block, or the offload unit
	"cpu_capacity_tokens", // cpu tier: the CPU store's size where known
	"evict_tokens",        // cpu tier: filler tokens sent to evict the GPU cache
	"mooncake_shape",      // remote tier, mooncake: bootstrap | engine | transfer
	"tpot_s",              // vllm bench: (latency - TTFT) / (output tokens - 1)
	"itl_mean_s",          // vllm bench: mean gap between chunks
	// Added by issue 27.
	"prompt_form",   // token_ids | text | chat: the form the prompt went in
	"server_family", // vllm | sglang | llamacpp | ollama | tgi | trtllm | openai (docs/servers.md)
	"cached_source", // where cached_tokens came from: usage.prompt_tokens_details.cached_tokens | timings.cache_n
}

// Counted says whether an ok probe row's TTFT is a measurement of its
// tier: a hit whose tier the server's counters confirmed, or a miss they
// did not contradict.
func Counted(r results.Row) bool {
	if r.Status != results.StatusOK {
		return false
	}
	v := r.Get("verified")
	if r.Tier == "miss" {
		return v != "false"
	}
	return v == "true"
}

// Suite declares the probe's results.
var Suite = results.Suite{
	Name: "probe", Title: "HTTP four-tier TTFT", Command: "kvtier probe", Order: 20,
	Files: []results.File{{
		Name: File, Columns: columns, Keys: []string{"tier", "prefix_tokens", "endpoint"},
		Match: []string{"tier", "prefix_tokens", "simulated"}, Metric: "TTFT", Value: "ttft_s", Counts: Counted,
	}},
}

func init() { results.RegisterSuite(Suite) }
