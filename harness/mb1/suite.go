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
	"penalty",
	"benefit_s",
}

// TokenColumns are the whole header of mb1_tokens.csv.
var TokenColumns = []string{
	"suite", "endpoint", "arm", "decode_streams", "prefill_tokens", "rep",
	"stream", "index", "t_s", // t_s: seconds since the cell started
	"inject_s", "prefill_done_s",
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
