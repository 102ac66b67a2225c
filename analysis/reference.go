package analysis

import "github.com/kvtier/kvtier/tiers/tierspec"

// The reference figures users already have: docs/reference.md (8x H20 96
// GB, ConnectX-7 200 Gb/s RoCE, vLLM 0.18.1, Qwen3-Coder-30B-A3B),
// sections "Four-tier TTFT", "MB1", "MB2" and "Capacity knee". They are
// drawn beside kvtier's figures on the same axes and labelled Reference,
// and the simulator's fidelity tests read them from here; they are never
// test expectations for a machine. TestReferenceMatchesDocs checks these
// tables against docs/reference.md.

// A RefTTFT is one row of the reference's four-tier TTFT table: TTFT p50
// in seconds serving a reused prefix of L tokens.
type RefTTFT struct {
	L                      int64
	Miss, Remote, CPU, GPU float64
}

// Tier returns the TTFT of a probe tier (miss, remote, cpu, gpu).
func (r RefTTFT) Tier(tier string) float64 {
	switch tier {
	case tierspec.Recompute.Probe:
		return r.Miss
	case tierspec.Remote.Probe:
		return r.Remote
	case tierspec.Host.Probe:
		return r.CPU
	case tierspec.HBM.Probe:
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

// ReferenceMB1 is the reference's MB1 table, by D then P.
var ReferenceMB1 = []RefMB1{
	{1, 2048, 4.79e-3, 0.163, 4.0, 0.041, 8},
	{1, 8192, 4.78e-3, 0.584, 5.0, 0.117, 24},
	{1, 32768, 4.78e-3, 4.515, 5.0, 0.903, 189},
	{1, 65536, 4.78e-3, 15.568, 5.3, 2.919, 610},
	{1, 131072, 4.78e-3, 56.765, 5.7, 10.017, 2094},
	{4, 2048, 5.62e-3, 0.138, 3.9, 0.036, 6},
	{4, 8192, 6.08e-3, 0.574, 4.5, 0.128, 21},
	{4, 32768, 6.09e-3, 4.529, 11.9, 0.381, 63},
	{4, 65536, 5.85e-3, 15.587, 19.8, 0.789, 135},
	{4, 131072, 6.27e-3, 56.697, 37.4, 1.517, 242},
	{8, 2048, 7.71e-3, 0.143, 4.5, 0.032, 4},
	{8, 8192, 7.69e-3, 0.583, 5.1, 0.114, 15},
	{8, 32768, 7.42e-3, 4.520, 11.7, 0.387, 52},
	{8, 65536, 7.67e-3, 15.615, 20.6, 0.757, 99},
	{8, 131072, 7.74e-3, 56.991, 40.2, 1.419, 183},
}

// ReferencePCIeGBps is the reference's host-to-device PCIe bandwidth,
// GB/s (its four-tier section).
const ReferencePCIeGBps = 54.0

// ReferenceMB2 is the reference's KV transfer bandwidth in GB/s by path
// (nine sizes × 5 reps through a KV transfer engine's batch write).
var ReferenceMB2 = map[string]float64{"intra": 9.7, "inter": 10.0}

// A RefKnee is one row of the reference's capacity knee (closed-loop
// multi-turn load, 4 concurrent sessions): the GPU KV capacity, the
// realized APC (prefix-cache hits / queries over the run) and TTFT p90.
type RefKnee struct {
	GB      float64 // GPU KV capacity, 10⁹ bytes
	APC     float64 // fraction
	TTFTP90 float64 // seconds
}

// ReferenceKnee is the reference's capacity knee; its working set was 4
// sessions × 0.91 GB = 3.6 GB.
var ReferenceKnee = []RefKnee{
	{1.2, 0.074, 13.00},
	{2.4, 0.363, 4.62},
	{3.6, 0.803, 0.53},
	{9.7, 0.729, 0.65},
	{14.5, 0.729, 0.65},
}
