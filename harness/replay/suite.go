package replay

import "github.com/kvtier/kvtier/results"

// The files of the replay suite.
const (
	File    = "replay.csv"     // one row per request
	RunFile = "replay_run.csv" // one row per run
)

// Backend and Transport are the backend and transport columns of replay
// and knee rows: requests to an HTTP server (the simulated column says
// whether it was kvtier's simulator).
const (
	Backend   = "http"
	Transport = "http"
)

// RequestColumns follow results.CommonColumns in a file of one row per
// request (seconds = TTFT; prefix_tokens = the prompt's tokens, blocks
// and bytes its server blocks and their KV).
var RequestColumns = []string{
	"endpoint",
	"simulated",     // true when the server said it is kvtier sim
	"trace",         // the trace file's name, or "generated"
	"dispatch",      // timestamp | session
	"request_index", // position in the trace's timestamp order, from 0
	"trace_line",    // line of the trace file
	"request_id",    // X-Request-Id sent
	"session",       // dense session number
	"turn",          // turn within the session
	"sched_s",       // when it was due, seconds since the run started
	"dispatch_s",    // when it was sent
	"input_tokens",  // the trace's input_length
	"max_tokens",    // sent: output_length capped by --max-output
	"ttft_s",        // vllm bench: first choice chunk
	"tpot_s",        // vllm bench: (E2E − TTFT) / (output tokens − 1)
	"itl_p50_s",     // gaps between choice chunks
	"itl_p90_s",
	"e2e_s",         // last choice chunk
	"prompt_tokens", // usage
	"output_tokens", // usage, else counted in the stream
	"token_counting",
	"cached_tokens",        // usage.prompt_tokens_details.cached_tokens; "" when the server does not send it
	"predicted_hit_tokens", // the LRU model's hit at gpu_blocks, fed the requests in the order they were sent
	"gpu_blocks",           // the server's KV pool the prediction used
	"slo_met",              // both --slo-ttft and --slo-tpot met; "" without SLOs
	"outcome",              // ok | failed | timeout | skipped
	// Added by issue 27.
	"api",         // completions | chat
	"prompt_form", // token_ids | text | chat: the form the prompt went in
}

// RunColumns follow results.CommonColumns in a file of one row per run
// (tokens columns are prompt tokens; seconds is empty: the run's figures
// are in their own columns).
var RunColumns = []string{
	"endpoint", "simulated", "trace", "dispatch", "speedup", "concurrency",
	"requests", "ok", "failed", "timed_out", "skipped", "duration_s",
	"apc",                   // realized: delta of prefix_cache_hits / delta of prefix_cache_queries
	"hit_tokens",            // delta of prefix_cache_hits
	"query_tokens",          // delta of prefix_cache_queries
	"apc_external",          // delta of external_prefix_cache_hits / queries
	"external_hit_tokens",   //
	"external_query_tokens", //
	"apc_source",            // where apc came from, or why it is missing
	"cached_share",          // sum of usage cached_tokens / prompt tokens; "" when the server does not send them
	"predicted_apc",         // the LRU model's hits / input tokens of the ok requests, at gpu_blocks
	"gpu_blocks",            // the server's KV pool
	"block_size",            // the server's block
	"capacity_tokens",       // gpu_blocks × block_size
	"capacity_bytes",        // and its KV, "" when the model's geometry is unknown
	"working_set_tokens",    // the workload's: the smallest cache at which the LRU model, fed the requests in the order they are expected to be sent, loses no hit
	"working_set_bytes",     //
	"ttft_p50_s", "ttft_p90_s", "ttft_p99_s",
	"tpot_p50_s", "tpot_p90_s", "e2e_p50_s",
	"slo_ttft_s", "slo_tpot_s", // "" when not given
	"slo_met",             // requests that met both SLOs
	"goodput_rps",         // slo_met / duration_s (vllm bench's goodput)
	"throughput_rps",      // ok / duration_s
	"output_tokens_per_s", // output tokens of the ok requests / duration_s
	"sim_lag_s",           // kvtier sim only: the most its engine fell behind real time (this machine's load is in its TTFTs)
	"note",
}

// Suite declares what kvtier replay writes.
var Suite = results.Suite{
	Name: "replay", Title: "Replay: a workload against a live server", Command: "kvtier replay", Order: 70,
	Files: []results.File{
		{
			Name: File, Columns: RequestColumns, Keys: []string{"trace", "dispatch", "endpoint"},
			Match: []string{"trace", "dispatch", "simulated"}, Metric: "TTFT", Value: "ttft_s",
		},
		{Name: RunFile, Columns: RunColumns},
	},
}

func init() { results.RegisterSuite(Suite) }
