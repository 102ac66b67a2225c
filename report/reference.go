package report

// The reference figures users already have: h20-reference.md (8x H20 96
// GB, ConnectX-7 200 Gb/s RoCE, vLLM 0.18.1, Qwen3-Coder-30B-A3B), the
// project's shared reference, sections "Four-tier TTFT", "MB1" and
// "MB2". They are drawn beside kvtier's figures on the same axes and
// labelled Reference; they are never test expectations for a machine.

// A RefTTFT is one row of the reference's four-tier TTFT table: TTFT p50
// in seconds serving a reused prefix of L tokens.
type RefTTFT struct {
	L                      int64
	Miss, Remote, CPU, GPU float64
}

// Tier returns the TTFT of a probe tier (miss, remote, cpu, gpu).
func (r RefTTFT) Tier(tier string) float64 {
	switch tier {
	case "miss":
		return r.Miss
	case "remote":
		return r.Remote
	case "cpu":
		return r.CPU
	case "gpu":
		return r.GPU
	}
	return 0
}

// ReferenceTTFT is the reference's four-tier TTFT table (no repetition
// count or spread was recorded for it).
var ReferenceTTFT = []RefTTFT{
	{8192, 0.588, 0.151, 0.076, 0.053},
	{16384, 1.547, 0.262, 0.105, 0.063},
	{32768, 4.604, 0.680, 0.158, 0.080},
	{65536, 15.23, 0.97, 0.27, 0.11},
}

// A RefMB1 is one cell of the reference's MB1 table (chunked prefill,
// 8192-token chunks, 3 reps per cell): D decode streams, one prefill of
// P tokens, and the penalty = effective TPOT during / base TPOT.
type RefMB1 struct {
	D, P        int
	BaseTPOT    float64 // seconds
	PrefillTTFT float64 // seconds
	PerStream   float64 // tokens per stream during the prefill
	EffTPOT     float64 // seconds
	Penalty     float64
}

// ReferenceMB1 is the reference's MB1 table.
var ReferenceMB1 = []RefMB1{
	{1, 2048, 4.79e-3, 0.163, 4.0, 0.041, 8},
	{1, 32768, 4.78e-3, 4.515, 5.0, 0.903, 189},
	{1, 131072, 4.78e-3, 56.765, 5.7, 10.017, 2094},
	{8, 2048, 7.71e-3, 0.143, 4.5, 0.032, 4},
	{8, 8192, 7.69e-3, 0.583, 5.1, 0.114, 15},
	{8, 32768, 7.42e-3, 4.520, 11.7, 0.387, 52},
	{8, 65536, 7.67e-3, 15.615, 20.6, 0.757, 99},
	{8, 131072, 7.74e-3, 56.991, 40.2, 1.419, 183},
}

// ReferenceMB2 is the reference's KV transfer bandwidth in GB/s by path
// (nine sizes × 5 reps through a KV transfer engine's batch write).
var ReferenceMB2 = map[string]float64{"intra": 9.7, "inter": 10.0}
