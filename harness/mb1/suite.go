package mb1

import (
	"github.com/kvtier/kvtier/results"
)

// Files of MB1.
const (
	File       = "mb1.csv"        // one row per cell, arm and rep
	TokensFile = "mb1_tokens.csv" // every decoded token's arrival
)

// ColPenaltyBound marks a row whose effective TPOT and penalties are
// bounds, not measurements; BoundLower is its value for lower bounds.
const (
	ColPenaltyBound = "penalty_bound"
	BoundLower      = "lower"
)

// The cell's coordinates, in both of MB1's files.
var (
	decodeStreams = results.Int(results.ColDecodeStreams, "count", "D: decode streams running")
	prefillTokens = results.Int(results.ColPrefillTokens, "tokens", "P: the injected prefill's prompt")
)

// columns follow results.CommonSchema in mb1.csv (backend "http", tier
// "", seconds = prefill TTFT).
var columns = []results.Column{
	results.EndpointColumn,
	results.SimulatedColumn,
	results.Text(results.ColArm, "interfere (prefill on the decoding instance) | control (on another instance) | baseline (no prefill)"),
	decodeStreams,
	prefillTokens,
	results.Text(results.ColChunkLabel, "the server's chunked-prefill size, as the user says"),
	results.Float(results.ColBaseTPOT, "s", "the base TPOT penalty and benefit_s are taken on (penalty_base says which)"),
	results.Float(results.ColPrefillTTFT, "s", "the injected prefill's TTFT"),
	results.Float(results.ColSimLag, "s", `kvtier sim only: the most it fell behind real time during the arm (kvtier_sim_lag_since_seconds of the scrape before it); past 10 % of the prefill TTFT the row is left out of the report's numbers, counted`),
	results.Int("tokens_during", "tokens", "tokens all streams decoded during the prefill"),
	results.Float(results.ColTokensPerStreamDuring, "tokens", "tokens_during / decode_streams"),
	results.Float(results.ColEffTPOT, "s", "effective TPOT during the prefill: its window / tokens_per_stream_during"),
	results.Float("itl_p50_during_s", "s", "p50 gap between tokens during the prefill"),
	results.Float("itl_p90_during_s", "s", "p90 gap between tokens during the prefill"),
	results.Float("itl_p50_base_s", "s", "p50 gap between tokens before it"),
	results.Float("itl_p90_base_s", "s", "p90 gap between tokens before it"),
	results.Float(results.ColPenalty, "ratio", "eff_tpot_s / base_tpot_s"),
	results.Float("benefit_s", "s", "prefill_ttft_s − tokens_per_stream_during × base_tpot_s"),
	results.Text(ColPenaltyBound, BoundLower+" (the decodes stalled for the whole prefill: eff_tpot_s and the penalties are at least the figures given) | empty (measured)"),
	results.Text("penalty_base", "baseline (the baseline arm's TPOT, the protocol's) | preinject (this arm's before the injection)"),
	results.Float("base_tpot_baseline_s", "s", "the baseline arm's effective TPOT over the same window (the protocol's)"),
	results.Float("base_tpot_preinject_s", "s", "this arm's mean per-stream token gap before the injection"),
	results.Float("penalty_vs_baseline", "ratio", "eff_tpot_s / base_tpot_baseline_s"),
	results.Float("penalty_vs_preinject", "ratio", "eff_tpot_s / base_tpot_preinject_s"),
	results.Text("token_counting", "continuous_usage | token_ids | chunks: how tokens were counted"),
	results.APIColumn,
	results.ServerVersionColumn,
	results.Int("prompt_tokens", "tokens", "the prefill's prompt tokens as the server reported them (usage)"),
	results.Text("prompt_form", "token_ids | text | chat: the form the prefill's prompt went in"),
	results.ServerFamilyColumn,
	results.ServerCheckColumn,
}

// TokenColumns are the whole header of mb1_tokens.csv: every decoded
// token's arrival.
var TokenColumns = []results.Column{
	results.Text(results.ColSuite, "mb1"),
	results.EndpointColumn,
	results.Text(results.ColArm, "interfere | control | baseline"),
	decodeStreams,
	prefillTokens,
	results.Int(results.ColRep, "count", "repetition, from 0"),
	results.Int(results.ColStream, "", "the decode stream, from 0"),
	results.Int(results.ColIndex, "", "the token's (chunk's) position in its stream, from 0"),
	results.Float(results.ColTime, "s", "when it arrived, seconds since the cell started; tokens that came in one chunk share it"),
	results.Float(results.ColInject, "s", "when the prefill was sent, seconds since the cell started"),
	results.Float(results.ColPrefillDone, "s", "when the prefill's first token came, seconds since the cell started"),
}

// Suite declares MB1's results.
var Suite = results.Suite{
	Name: "mb1", Title: "MB1: decode during a prefill", Command: "kvtier interfere", Order: 30,
	Files: []results.File{
		{Name: File, Columns: columns, Keys: []string{results.ColArm, results.ColDecodeStreams, results.ColPrefillTokens, results.ColEndpoint},
			Match: []string{results.ColArm, results.ColDecodeStreams, results.ColPrefillTokens}, Metric: "penalty", Value: results.ColPenalty},
		{Name: TokensFile, Columns: TokenColumns, Raw: true},
	},
}

func init() { results.RegisterSuite(Suite) }
