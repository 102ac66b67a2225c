package mb1

import (
	"github.com/kvtier/kvtier/results"
)

// Files of MB1.
const (
	File       = "mb1.csv"        // one row per cell, arm and rep
	TokensFile = "mb1_tokens.csv" // every decoded token's arrival
)

// columns follow results.CommonColumns in mb1.csv (backend "http", tier
// "", seconds = prefill TTFT).
var columns = []string{
	"endpoint",
	"simulated",
	"arm",            // interfere | control | baseline
	"decode_streams", // D
	"prefill_tokens", // P
	"chunk_label",    // the server's chunked-prefill size, as the user says
	"base_tpot_s",
	"prefill_ttft_s",
	"tokens_during", // all streams
	"tokens_per_stream_during",
	"eff_tpot_s",
	"itl_p50_during_s",
	"itl_p90_during_s",
	"itl_p50_base_s",
	"itl_p90_base_s",
	"penalty",   // eff_tpot_s / base_tpot_s
	"benefit_s", // prefill_ttft_s - tokens_per_stream_during × base_tpot_s
	// Added by issue 13. base_tpot_s, penalty and benefit_s are on the
	// protocol's base, the baseline arm's, when the cell has one
	// (penalty_base says which).
	"penalty_base",          // baseline | preinject
	"base_tpot_baseline_s",  // the baseline arm's effective TPOT over the same window (the protocol's)
	"base_tpot_preinject_s", // this arm's mean per-stream token gap before the injection
	"penalty_vs_baseline",
	"penalty_vs_preinject",
	"token_counting", // continuous_usage | token_ids | chunks: how tokens were counted
	"api",            // completions | chat
	"server_version", // GET /version, "" unknown
	// Added by issue 27.
	"prompt_tokens", // the prefill's prompt tokens as the server reported them (usage)
	"prompt_form",   // token_ids | text | chat: the form the prefill's prompt went in
}

// TokenColumns are the whole header of mb1_tokens.csv.
var TokenColumns = []string{
	"suite", "endpoint", "arm", "decode_streams", "prefill_tokens", "rep",
	"stream", "index", "t_s", // t_s: seconds since the cell started
	"inject_s", "prefill_done_s", // tokens that came in one chunk share its t_s
}

// Suite declares MB1's results.
var Suite = results.Suite{
	Name: "mb1", Title: "MB1: decode during a prefill", Command: "kvtier interfere", Order: 30,
	Files: []results.File{
		{Name: File, Columns: columns, Keys: []string{"arm", "decode_streams", "prefill_tokens", "endpoint"},
			Match: []string{"arm", "decode_streams", "prefill_tokens"}, Metric: "penalty", Value: "penalty"},
		{Name: TokensFile, Columns: TokenColumns, Raw: true},
	},
}

func init() { results.RegisterSuite(Suite) }
