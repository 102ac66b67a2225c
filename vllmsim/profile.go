package vllmsim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/results"
)

// A Profile holds the rates and fixed costs the cost model turns work into
// time with. Rates of zero mean "free": the work they price takes no time.
//
// The model, per engine step (one forward pass of the batch):
//
//	step = StepBase + DecodePerSeq·decodes
//	     + prefill GEMM FLOPs / GEMMTFLOPS + attention FLOPs / AttnTFLOPS
//	     + KV bytes the decodes read / HBMGBps
//	     + (AdmitBase + AdmitPerToken·prompt) for each request first scheduled
//
// and per request, outside the engine and concurrent with it,
// APIBase + APIPerToken·prompt + APIPerRunning·(requests in the engine)
// (HTTP, tokenization, streaming the others). A prefix loaded from
// CPU memory or a peer costs its bytes over HostGBps or RemoteGBps, while
// the engine keeps stepping other requests, as vLLM's connectors load
// asynchronously.
type Profile struct {
	Name   string
	Source string // where the figures come from
	// Assumed names the figures no measurement gave ("" when none):
	// reports print it beside the profile.
	Assumed string

	GEMMTFLOPS float64 // prefill linear layers (QKV/O projections, MLP or experts)
	AttnTFLOPS float64 // prefill attention (scores and values)
	HBMGBps    float64 // decode reads of the KV cache
	HostGBps   float64 // CPU offload hit loaded back over PCIe (host to device)
	// HostStoreGBps is the CPU offload's store of new blocks, device to
	// host: the other direction of PCIe, which is full duplex, so stores
	// do not slow loads. A block can be loaded back only once stored.
	HostStoreGBps float64
	RemoteGBps    float64 // P/D: the consumer pulls the producer's blocks

	StepBase     float64 // seconds, fixed cost of one engine step
	DecodePerSeq float64 // seconds per decoding sequence in a step

	AdmitBase     float64 // seconds, engine cost when a request is first scheduled
	AdmitPerToken float64 // seconds per prompt token of that cost

	APIBase       float64 // seconds, front-end cost of a request
	APIPerToken   float64 // seconds per prompt token (tokenization, input processing)
	APIPerRunning float64 // seconds per request already in the engine (the front end streams them too)

	// A prefill step earns decoding sequences InterleaveBase +
	// (InterleaveMax-InterleaveBase)·(D-1)/(D-1+InterleaveHalf) decode
	// steps, D the number decoding; the engine runs them between prompt
	// chunks (see engine.schedule).
	InterleaveBase float64
	InterleaveMax  float64
	InterleaveHalf float64

	// CountEveryAttempt is how the simulated vLLM version counts its
	// prefix-cache lookups, not a cost: true as vLLM 0.18.1, whose
	// scheduler looks the request at the head of the waiting queue up
	// (KVCacheManager.get_computed_blocks, which adds its tokens to
	// prefix_cache_queries and its hits to prefix_cache_hits) at every
	// step that reaches the queue, also when allocate_slots then finds no
	// room and the request stays waiting, to be looked up and counted
	// again at the next step (vLLM issue 43736; PR 48860 counts a request
	// once, after 0.18.1); false as vLLM after it: once per request.
	// Either way a request that was preempted is not counted again.
	CountEveryAttempt bool
}

// h20 is calibrated to the reference measurements of vLLM 0.18.1 serving
// Qwen3-Coder-30B-A3B on one H20 (docs/reference.md):
//
//   - GEMMTFLOPS and AttnTFLOPS: a fit of miss TTFT (8k 0.588 s ... 64k
//     15.23 s) to a·L + b·L², where b·L² is causal attention; the linear
//     term is 2·2.73e9 FLOPs per token (the model's active weights).
//   - StepBase, DecodePerSeq: MB1 base TPOT 4.79 ms at D=1, 7.7 ms at D=8.
//   - Front end and admission: GPU-hit TTFT grows from 42 ms at 1k to
//     111 ms at 64k, 1.08 µs per prompt token. The per-token share is
//     engine work (block hashing, scheduling) that blocks decode steps:
//     MB1 at D=1 sees only about four decode tokens slip through before
//     a 2k, 32k or 128k prefill starts. The fixed share is split between
//     the front end (15 ms, concurrent with decode, 2.1 ms more per
//     request it is already streaming: about 4.5 tokens per stream slip
//     through before a short prefill at D = 1, 4 and 8 alike, 5 at D = 8)
//     and the engine's admission.
//   - InterleaveBase, InterleaveMax, InterleaveHalf: MB1 tokens per stream
//     during a long prefill: about 0.1 per prompt chunk at D=1 and 2.2 to
//     2.4 at D=4 and D=8 alike (37.4 and 40.2 tokens over the 16 chunks of
//     128k): the decode steps between chunks saturate with D, they do not
//     grow with it.
//   - HostGBps: CPU-hit TTFT minus GPU-hit TTFT over the prefix bytes
//     (vLLM's offload reaches about 40 of the 54 GB/s PCIe H2D).
//   - RemoteGBps: the same for the remote tier (about 7 GB/s).
//   - HostStoreGBps: assumed, not measured (the reference measured no
//     store): the 40 GB/s the loads reach, in the other direction.
//   - CountEveryAttempt: vLLM 0.18.1 counted every lookup of a waiting
//     request; the reference's realized APC below and at its knee is
//     that count (docs/reference.md, "What the simulator matches").
//
// Note: a weight-traffic decode model (each step reads the experts its
// tokens route to, uniformly at random) predicts a D=8 step twice as long
// as measured: real routing is correlated. The per-sequence cost is
// therefore fitted, not derived.
var h20 = Profile{
	Name:           "h20",
	Source:         "h20 reference (vLLM 0.18.1, Qwen3-Coder-30B-A3B, 1x H20)",
	GEMMTFLOPS:     126,
	AttnTFLOPS:     138,
	HBMGBps:        3000,
	HostGBps:       40,
	HostStoreGBps:  40,
	Assumed:        assumedHostStore,
	RemoteGBps:     7,
	StepBase:       4.37e-3,
	DecodePerSeq:   0.416e-3,
	AdmitBase:      0.0216,
	AdmitPerToken:  1.08e-6,
	APIBase:        0.015,
	APIPerRunning:  0.0021,
	InterleaveBase: 0.1,
	InterleaveMax:  2.35,
	InterleaveHalf: 0.25,

	CountEveryAttempt: true,
}

// assumedHostStore says that the profile's store rate is assumed.
const assumedHostStore = "host store GB/s (no store was measured: the load rate, device to host)"

// zero models no cost at all: every delay is zero. It measures what a
// client itself adds.
var zero = Profile{Name: "zero", Source: "no modeled cost"}

var profiles = map[string]Profile{"h20": h20, "zero": zero}

// DefaultProfile is the profile a server uses when none is named.
const DefaultProfile = "h20"

// ProfileNames lists the built-in profiles, sorted.
func ProfileNames() []string {
	return slices.Sorted(maps.Keys(profiles))
}

// LookupProfile returns the built-in profile named name: "h20" (the
// default, also for "") or "zero".
func LookupProfile(name string) (Profile, error) {
	if name == "" {
		name = DefaultProfile
	}
	p, ok := profiles[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Profile{}, fmt.Errorf("sim: unknown profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	return p, nil
}

// ProfileFromCSV returns the h20 profile with its rates replaced by those a
// kvtier tier sweep measured: the p50 gbps of the ok load rows of tiers
// host, hbm and remote, of the ok store rows of tier host (the offload's
// store; otherwise it stays assumed), and the p50 tflops of tier
// recompute (attention keeps its h20 ratio to the GEMM rate). A tier the
// file lacks keeps its h20 figure, and Source says which figures were
// replaced.
func ProfileFromCSV(path string) (Profile, error) {
	rows, _, err := results.ReadCSV(path)
	if err != nil {
		return Profile{}, fmt.Errorf("sim: calibrate: %w", err)
	}
	p := h20
	p.Name = "calibrated"
	var used []string
	gbps := func(r results.Row) float64 { return r.GBps }
	for _, f := range []struct {
		tier, what string
		load       bool
		to         *float64
	}{
		{"host", "host", true, &p.HostGBps}, {"hbm", "hbm", true, &p.HBMGBps},
		{"remote", "remote", true, &p.RemoteGBps}, {"host", "host store", false, &p.HostStoreGBps},
	} {
		if v, ok := p50(rows, f.tier, f.load, gbps); ok {
			*f.to = v
			used = append(used, fmt.Sprintf("%s %.3g GB/s", f.what, v))
			if !f.load {
				p.Assumed = ""
			}
		}
	}
	if v, ok := p50(rows, "recompute", true, func(r results.Row) float64 { return r.Float("tflops") }); ok {
		p.AttnTFLOPS = v * h20.AttnTFLOPS / h20.GEMMTFLOPS
		p.GEMMTFLOPS = v
		used = append(used, fmt.Sprintf("recompute %.3g TFLOP/s", v))
	}
	if len(used) == 0 {
		return Profile{}, fmt.Errorf("sim: calibrate: %s has no ok rows of tiers host, hbm, remote or recompute", path)
	}
	p.Source = fmt.Sprintf("%s (%s; other figures from h20)", path, strings.Join(used, ", "))
	return p, nil
}

// p50 is the median of f over the ok rows of tier in the direction load
// (or store) with a positive finite value.
func p50(rows []results.Row, tier string, load bool, f func(results.Row) float64) (float64, bool) {
	var vs []float64
	for _, r := range rows {
		if r.Tier != tier || r.Status != results.StatusOK || r.IsLoad() != load {
			continue
		}
		if v := f(r); v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	return results.Describe(vs).P50, true
}
