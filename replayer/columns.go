package replayer

import "github.com/kvtier/kvtier/results"

// Backend and Transport are the backend and transport columns of replay
// and knee rows: requests to an HTTP server (the simulated column says
// whether it was kvtier's simulator).
const (
	Backend   = "http"
	Transport = "http"
)

// RequestColumns follow results.CommonSchema in a file of one row per
// request (seconds = TTFT; prefix_tokens = the prompt's tokens, blocks
// and bytes its server blocks and their KV).
var RequestColumns = []results.Column{
	results.EndpointColumn,
	results.SimulatedColumn,
	results.Text(results.ColTrace, `the trace file's name, or "generated"`),
	results.Text(results.ColDispatch, "timestamp (each request at its time) | session (each session's turns in order)"),
	results.Int("request_index", "", "position in the trace's timestamp order, from 0"),
	results.Int("trace_line", "", "line of the trace file"),
	results.RequestIDColumn,
	results.Int("session", "", "dense session number"),
	results.Int("turn", "", "turn within the session, from 0"),
	results.Float("sched_s", "s", "when it was due, seconds since the run started"),
	results.Float("dispatch_s", "s", "when it was sent, seconds since the run started"),
	results.Int(results.ColInputTokens, "tokens", "the trace's input_length"),
	results.Int("max_tokens", "tokens", "sent: output_length capped by --max-output"),
	results.Float(results.ColTTFT, "s", "time to the first choice chunk (vllm bench's TTFT)"),
	results.Float("tpot_s", "s", "vllm bench's TPOT: (E2E − TTFT) / (output tokens − 1)"),
	results.Float("itl_p50_s", "s", "p50 gap between choice chunks"),
	results.Float("itl_p90_s", "s", "p90 gap between choice chunks"),
	results.Float("e2e_s", "s", "time to the last choice chunk"),
	results.PromptTokensColumn,
	results.Int(results.ColOutputTokens, "tokens", "output tokens: usage, else counted in the stream"),
	results.Text("token_counting", "continuous_usage | token_ids | chunks: how output tokens were counted"),
	results.Int("cached_tokens", "tokens", `usage.prompt_tokens_details.cached_tokens or llama.cpp timings.cache_n; "" when the server does not send it`),
	results.Int("predicted_hit_tokens", "tokens", "the LRU model's hit at gpu_blocks, fed the requests in the order they were sent"),
	results.Int(results.ColGPUBlocks, "blocks", "the server's KV pool the prediction used"),
	results.Bool("slo_met", `both --slo-ttft and --slo-tpot met; "" without SLOs`),
	results.Text("outcome", "ok | failed | timeout | skipped"),
	results.APIColumn,
	results.PromptFormColumn,
	results.ServerFamilyColumn,
	results.CachedSourceColumn,
	results.ServerCheckColumn,
}

// RunColumns follow results.CommonSchema in a file of one row per run
// (tokens columns are prompt tokens; seconds is empty: the run's figures
// are in their own columns).
var RunColumns = []results.Column{
	results.EndpointColumn,
	results.SimulatedColumn,
	results.Text(results.ColTrace, `the trace file's name, or "generated"`),
	results.Text(results.ColDispatch, "timestamp | session"),
	results.Float("speedup", "ratio", "--speedup: the trace's clock divided by this"),
	results.Int(results.ColConcurrency, "count", "--max-concurrency: requests in flight at most (0: no limit)"),
	results.Int(results.ColRequests, "count", "requests of the run"),
	results.Int(results.ColOk, "count", "requests that completed"),
	results.Int(results.ColFailed, "count", "requests that failed"),
	results.Int(results.ColTimedOut, "count", "requests that timed out"),
	results.Int(results.ColSkipped, "count", "requests not sent (longer than the server's context, ...)"),
	results.Float(results.ColDuration, "s", "the run's wall time"),
	results.Float(results.ColAPC, "fraction", "realized prefix-cache hit ratio: delta of prefix_cache_hits / delta of prefix_cache_queries"),
	results.Int("hit_tokens", "tokens", "delta of the server's prefix_cache_hits"),
	results.Int("query_tokens", "tokens", "delta of the server's prefix_cache_queries"),
	results.Float(results.ColAPCExternal, "fraction", "delta of external_prefix_cache_hits / queries"),
	results.Int("external_hit_tokens", "tokens", "delta of external_prefix_cache_hits"),
	results.Int("external_query_tokens", "tokens", "delta of external_prefix_cache_queries"),
	results.Text(results.ColAPCSource, "where apc came from, or why it is missing"),
	results.Float(results.ColCachedShare, "fraction", `sum of usage cached_tokens / prompt tokens over the requests whose figures are possible; "" when the server does not send them`),
	results.Int(results.ColServerImpossible, "count", "requests whose server figures cannot be true (their server_check): left out of cached_share"),
	results.Float(results.ColPredictedAPC, "fraction", "the LRU model's hits / input tokens of the ok requests, at gpu_blocks"),
	results.Int(results.ColGPUBlocks, "blocks", "the server's KV pool"),
	results.Int("block_size", "tokens", "the server's block"),
	results.Int(results.ColCapacityTokens, "tokens", "gpu_blocks × block_size"),
	results.Int(results.ColCapacityBytes, "B", `the KV of capacity_tokens; "" when the model's geometry is unknown`),
	results.Int(results.ColWorkingSetTokens, "tokens", "the smallest cache at which the LRU model, fed the requests in the order they are expected to be sent, loses no hit"),
	results.Int(results.ColWorkingSetBytes, "B", "the KV of working_set_tokens"),
	results.Float(results.ColTTFTP50, "s", "p50 TTFT of the ok requests"),
	results.Float(results.ColTTFTP90, "s", "p90 TTFT of the ok requests"),
	results.Float(results.ColTTFTP99, "s", "p99 TTFT of the ok requests"),
	results.Float(results.ColTPOTP50, "s", "p50 TPOT of the ok requests"),
	results.Float("tpot_p90_s", "s", "p90 TPOT of the ok requests"),
	results.Float("e2e_p50_s", "s", "p50 end-to-end time of the ok requests"),
	results.Float("slo_ttft_s", "s", `--slo-ttft; "" when not given`),
	results.Float("slo_tpot_s", "s", `--slo-tpot; "" when not given`),
	results.Int("slo_met", "count", "requests that met both SLOs"),
	results.Float(results.ColGoodputRPS, "req/s", "slo_met / duration_s (vllm bench's goodput)"),
	results.Float(results.ColThroughputRPS, "req/s", "ok / duration_s"),
	results.Float("output_tokens_per_s", "tokens/s", "output tokens of the ok requests / duration_s"),
	results.Float(results.ColSimLag, "s", "kvtier sim only: the most its engine fell behind real time during the run (this machine's load is in its TTFTs); past 10 % of ttft_p50_s the run is footnoted and left out of the report's headline and the knee's findings, counted"),
	results.Text(results.ColNote, "what else the run wants said"),
	results.ServerFamilyColumn,
}
