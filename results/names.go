package results

// The names of columns more than one package reads or writes: the suites
// declare them (with type, unit and meaning) under these names, and
// report, plot, compare and analysis read them by these names, never by
// a string of their own.

// Common columns (CommonSchema).
const (
	ColSuite        = "suite"
	ColBackend      = "backend"
	ColTransport    = "transport"
	ColTier         = "tier"
	ColLayout       = "layout"
	ColModel        = "model"
	ColPrefixTokens = "prefix_tokens"
	ColBlocks       = "blocks"
	ColChunkBytes   = "chunk_bytes"
	ColBytes        = "bytes"
	ColRep          = "rep"
	ColSeconds      = "seconds"
	ColGBPerSecond  = "gb_per_s"
	ColStatus       = "status"
	ColReason       = "reason"
)

// Columns of the device suites: sweep.csv, transfer.csv, mesh.csv (and
// mesh_matrix.csv). The direction column is DirectionColumn.
const (
	ColCopy            = "copy"
	ColDevice          = "device"
	ColGPU             = "gpu" // not a tier: the CUDA ordinal, or AllGPUs
	ColSrcMem          = "src_mem"
	ColDstMem          = "dst_mem"
	ColPath            = "path"
	ColVerified        = "verified"
	ColFLOPS           = "flops"
	ColTFLOPS          = "tflops"
	ColComputeDtype    = "compute_dtype"
	ColLinkGBPerSecond = "link_gb_per_s"
	ColLinkFrac        = "link_frac"
	ColLineGBPerSecond = "line_gb_per_s"
	ColLineFrac        = "line_frac"
	ColT3GiB           = "t_3gib_s"
	ColT11_5GiB        = "t_11_5gib_s"
	ColPair            = "pair"
	ColSrcRank         = "src_rank"
	ColDstRank         = "dst_rank"
	ColSrcNode         = "src_node"
	ColDstNode         = "dst_node"
)

// Columns of the HTTP suites: probe.csv, mb1.csv and mb1_tokens.csv.
const (
	ColEndpoint              = "endpoint"
	ColSimulated             = "simulated"
	ColTTFT                  = "ttft_s"
	ColVerifyReason          = "verify_reason"
	ColArm                   = "arm"
	ColDecodeStreams         = "decode_streams"
	ColPrefillTokens         = "prefill_tokens"
	ColChunkLabel            = "chunk_label"
	ColBaseTPOT              = "base_tpot_s"
	ColPrefillTTFT           = "prefill_ttft_s"
	ColEffTPOT               = "eff_tpot_s"
	ColTokensPerStreamDuring = "tokens_per_stream_during"
	ColPenalty               = "penalty"
	ColStream                = "stream"
	ColIndex                 = "index"
	ColTime                  = "t_s"
	ColInject                = "inject_s"
	ColPrefillDone           = "prefill_done_s"
)

// Columns of replay's and the knee's files.
const (
	ColDispatch         = "dispatch"
	ColConcurrency      = "concurrency"
	ColRequests         = "requests"
	ColOk               = "ok"
	ColFailed           = "failed"
	ColTimedOut         = "timed_out"
	ColSkipped          = "skipped"
	ColDuration         = "duration_s"
	ColInputTokens      = "input_tokens"
	ColOutputTokens     = "output_tokens"
	ColAPC              = "apc"
	ColAPCExternal      = "apc_external"
	ColAPCSource        = "apc_source"
	ColCachedShare      = "cached_share"
	ColServerImpossible = "server_impossible"
	ColPastLimit        = "past_limit"
	ColLinear           = "linear_s_per_token"
	ColQuadratic        = "quadratic_s_per_token2"
	ColPredictedAPC     = "predicted_apc"
	ColGPUBlocks        = "gpu_blocks"
	ColCapacityTokens   = "capacity_tokens"
	ColCapacityBytes    = "capacity_bytes"
	ColWorkingSetTokens = "working_set_tokens"
	ColWorkingSetBytes  = "working_set_bytes"
	ColTTFTP50          = "ttft_p50_s"
	ColTTFTP90          = "ttft_p90_s"
	ColTTFTP99          = "ttft_p99_s"
	ColTPOTP50          = "tpot_p50_s"
	ColGoodputRPS       = "goodput_rps"
	ColThroughputRPS    = "throughput_rps"
	ColSimLag           = "sim_lag_s"
	ColServer           = "server"
)

// Columns of the trace's and the plan's files.
const (
	ColTrace          = "trace"
	ColFormat         = "format"
	ColBlockTokens    = "block_tokens"
	ColMetric         = "metric"
	ColStat           = "stat"
	ColValue          = "value"
	ColPredicted      = "predicted"
	ColMethod         = "method"
	ColSampleRate     = "sample_rate"
	ColErrorPP        = "error_pp"
	ColInstances      = "instances"
	ColRoute          = "route"
	ColWindow         = "window_s"
	ColTouch          = "touch"
	ColNote           = "note"
	ColOrder          = "order"
	ColCapacityBlocks = "capacity_blocks"
	ColHitRatio       = "hit_ratio"
	ColCeiling        = "ceiling"
	ColKVBytes        = "kv_bytes"
	ColDistinctBlocks = "distinct_blocks"
	ColInclusive      = "inclusive"
	ColLoadP50        = "load_p50_s"
	ColLoadP90        = "load_p90_s"
	ColLoadExcludes   = "load_excludes"
	ColMissing        = "missing"
	ColExtrapolated   = "extrapolated"
	ColCostSource     = "cost_source"
	ColCosts          = "costs"
	ColMeasured       = "measured"
	ColSource         = "source"
	ColConfig         = "config"
	ColFormula        = "formula"
	ColAlpha          = "alpha_s"
	ColRate           = "rate"
	ColRateUnit       = "rate_unit"
	ColFitProblem     = "fit_problem"
	ColStoreAlpha     = "store_alpha_s"
	ColStoreRate      = "store_rate"
	ColStoreUnchecked = "store_unchecked"
)

// AllGPUs is the gpu column (ColGPU) of `sweep --gpu all`'s aggregate
// rows and manifest: every GPU loading at once.
const AllGPUs = "all"
