package results

// File names and suite-specific columns of every results directory. The
// suites write them and the analysis commands (report, plot, compare)
// read them; this list is the contract between the two. A suite may add
// columns after these, never rename or drop one.

// Sample files.
const (
	SweepFile     = "sweep.csv"      // suite "sweep": device-level tiers
	TransferFile  = "transfer.csv"   // suite "transfer": MB2
	ProbeFile     = "probe.csv"      // suite "probe": HTTP four-tier TTFT
	MB1File       = "mb1.csv"        // suite "mb1": one row per cell, arm and rep
	MB1TokensFile = "mb1_tokens.csv" // raw token arrival series of MB1

	TraceFile        = "trace.csv"         // suite "trace": a trace's figures, one row each
	TraceCurveFile   = "trace_curve.csv"   // raw: LRU hit ratio vs capacity
	TraceWindowsFile = "trace_windows.csv" // raw: working set per sliding window over time
	PlanFile         = "plan.csv"          // suite "plan": one row per capacity configuration
	PlanCostsFile    = "plan_costs.csv"    // raw: the tier costs a plan used, or why missing
)

// SweepColumns follow CommonColumns in sweep.csv. Tiers: hbm, host,
// remote, recompute.
var SweepColumns = []string{
	"device",        // "cpu (host stand-in)", "NVIDIA H200 [0000:19:00.0]"
	"copy",          // percopy | batch | contiguous ("" for recompute)
	"src_mem",       // device | pinned | pageable | peer
	"dst_mem",       // device | pinned | pageable
	"path",          // remote: loopback | intra | inter; cuda remote: gpudirect | bounce
	"timing",        // events | clock
	"held",          // true when the stream was held until the plan was queued
	"verified",      // true | false | "" (not checked on this rep)
	"flops",         // recompute: FLOPs of the prefill
	"tflops",        // recompute: achieved TFLOP/s
	"compute_dtype", // recompute: bf16 | fp32
	"link_gbps",     // payload limit of the link, "" unknown
	"link_frac",     // gbps / link_gbps
	"seed",
}

// TransferColumns follow CommonColumns in transfer.csv (tier = "remote",
// layout = layerwise | blockwise | contiguous).
var TransferColumns = []string{
	"peer",        // HOST:PORT
	"path",        // intra | inter | loopback | peercopy
	"device",      // NIC (mlx5_0, rxe0) or "tcp"
	"conns",       // parallel TCP connections or QPs
	"src_mem",     // host | gpu (the peer's pool)
	"dst_mem",     // host | gpu
	"line_gbps",   // NIC line rate in GB/s (or the shaped rate), "" unknown
	"line_frac",   // gbps / line_gbps
	"t_3gib_s",    // derived: seconds to move 3 GiB at this rep's rate
	"t_11_5gib_s", // derived: seconds to move 11.5 GiB at this rep's rate
	"verified",
}

// ProbeColumns follow CommonColumns in probe.csv (backend = "http",
// transport = "http", tier = miss | gpu | cpu | remote, seconds = TTFT).
var ProbeColumns = []string{
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
	"cached_tokens",       // usage.prompt_tokens_details.cached_tokens, "" absent
	"hit_tokens",          // delta of prefix_cache_hits over the request
	"external_hit_tokens", // delta of external_prefix_cache_hits
	"verified",            // true | false
	"verify_reason",       // why not verified
}

// MB1Columns follow CommonColumns in mb1.csv (backend = "http", tier =
// "", seconds = prefill TTFT).
var MB1Columns = []string{
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

// MB1TokenColumns are the whole header of mb1_tokens.csv.
var MB1TokenColumns = []string{
	"suite", "endpoint", "arm", "decode_streams", "prefill_tokens", "rep",
	"stream", "index", "t_s", // t_s: seconds since the cell started
	"inject_s", "prefill_done_s",
}
