package analysis

import (
	"slices"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// A Prediction tests the model "hit TTFT = GPU-hit TTFT + device-level
// fetch time of the same prefix" for one hit tier at one prefix length.
type Prediction struct {
	L         int64
	Tier      string   // probe tier: cpu or remote
	Sim       bool     // the probe ran against the simulator
	Device    SweepKey // the sweep configuration the fetch time comes from
	GPU       float64  // measured GPU-hit TTFT p50, seconds
	Fetch     float64  // device fetch time at L, seconds
	FetchFrom string   // "measured" (sweep p50 at L) or "model" (fitted)
	Predicted float64
	Measured  float64 // measured hit TTFT p50
	ErrPct    float64 // (Predicted - Measured) / Measured · 100
}

// deviceTierOf returns the device tier whose fetch an HTTP hit tier adds
// to a hit from the fastest tier (the GPU's), and whether it adds one:
// cpu is host's fetch, remote remote's; the fastest tier and recompute
// add none.
func deviceTierOf(probe string) (string, bool) {
	d, ok := tierspec.Lookup(probe)
	if !ok || d.Probe != probe || !d.Moves() || d.Name == fastestProbe().Name {
		return "", false
	}
	return d.Name, true
}

// fastestProbe is the HTTP tier the predictions start from: a hit in
// the GPU's memory.
func fastestProbe() tierspec.Desc {
	ps := tierspec.Probes()
	return ps[len(ps)-1]
}

// Predict predicts every cpu and remote hit TTFT of probe from its GPU-hit
// TTFT plus the fetch time of the matching device tier in sweep (its p50
// at the same L when measured, else the fitted model within the measured
// range), for every sweep configuration of that tier (host stand-in ones
// only where no GPU configuration of the tier exists).
func Predict(sweep, probe []results.Row) []Prediction {
	cells, groups := ProbeDists(probe)
	sweep = results.Loads(sweep) // a probe's TTFT is a load's
	fits, _ := Fits(sweep)
	fitOf := map[SweepKey]Fit{}
	for _, f := range fits {
		fitOf[f.Key] = f
	}
	skeys, sgroups := SweepCells(sweep)
	var devKeys []SweepKey
	for _, k := range skeys {
		if !slices.Contains(devKeys, k.SweepKey) {
			devKeys = append(devKeys, k.SweepKey)
		}
	}
	// A CPU stand-in's fetch says nothing about a GPU server's hit when a
	// GPU configuration of the same tier was measured.
	gpuTier := map[string]bool{}
	for _, k := range devKeys {
		if !IsStandIn(k.Backend) {
			gpuTier[k.Tier] = true
		}
	}
	var out []Prediction
	for _, c := range cells {
		dt, hit := deviceTierOf(c.Tier)
		if !hit {
			continue
		}
		meas := CountedTTFT(groups[c])
		gpu := CountedTTFT(groups[ProbeCell{c.Sim, c.L, fastestProbe().Probe}])
		if meas.N == 0 || gpu.N == 0 {
			continue
		}
		for _, dk := range devKeys {
			if dk.Tier != dt || (IsStandIn(dk.Backend) && gpuTier[dt]) {
				continue
			}
			p := Prediction{L: c.L, Tier: c.Tier, Sim: c.Sim, Device: dk, GPU: gpu.P50, Measured: meas.P50}
			if d := Summarize(Column(sgroups[SweepCell{dk, c.L}], Seconds)); d.N > 0 {
				p.Fetch, p.FetchFrom = d.P50, "measured"
			} else if f, ok := fitOf[dk]; ok && c.L >= f.MinL && c.L <= f.MaxL {
				p.Fetch, p.FetchFrom = f.TimeAt(c.L), "model"
			} else {
				continue
			}
			p.Predicted = p.GPU + p.Fetch
			p.ErrPct = (p.Predicted - p.Measured) / p.Measured * 100
			out = append(out, p)
		}
	}
	return out
}
