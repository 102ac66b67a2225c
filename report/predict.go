package report

import (
	"cmp"
	"io"
	"math"
	"slices"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// A Prediction tests the model "hit TTFT = GPU-hit TTFT + device-level
// fetch time of the same prefix" for one hit tier at one prefix length.
type Prediction struct {
	L         int64
	Tier      string            // probe tier: cpu or remote
	Sim       bool              // the probe ran against the simulator
	Device    analysis.SweepKey // the sweep configuration the fetch time comes from
	GPU       float64           // measured GPU-hit TTFT p50, seconds
	Fetch     float64           // device fetch time at L, seconds
	FetchFrom string            // "measured" (sweep p50 at L) or "model" (fitted)
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
	cells, groups := probeDists(probe)
	sweep = results.Loads(sweep) // a probe's TTFT is a load's
	fits, _ := analysis.Fits(sweep)
	fitOf := map[analysis.SweepKey]analysis.Fit{}
	for _, f := range fits {
		fitOf[f.Key] = f
	}
	skeys, sgroups := analysis.GroupBy(sweep, func(x results.Row) sweepCell { return sweepCell{analysis.SweepKeyOf(x), x.PrefixTokens} },
		func(a, b sweepCell) int {
			return cmp.Or(analysis.CompareSweepKeys(a.SweepKey, b.SweepKey), cmp.Compare(a.L, b.L))
		})
	var devKeys []analysis.SweepKey
	for _, k := range skeys {
		if !slices.Contains(devKeys, k.SweepKey) {
			devKeys = append(devKeys, k.SweepKey)
		}
	}
	// A CPU stand-in's fetch says nothing about a GPU server's hit when a
	// GPU configuration of the same tier was measured.
	gpuTier := map[string]bool{}
	for _, k := range devKeys {
		if !analysis.IsStandIn(k.Backend) {
			gpuTier[k.Tier] = true
		}
	}
	var out []Prediction
	for _, c := range cells {
		dt, hit := deviceTierOf(c.Tier)
		if !hit {
			continue
		}
		meas := countedTTFT(groups[c])
		gpu := countedTTFT(groups[probeCell{c.Sim, c.L, fastestProbe().Probe}])
		if meas.N == 0 || gpu.N == 0 {
			continue
		}
		for _, dk := range devKeys {
			if dk.Tier != dt || (analysis.IsStandIn(dk.Backend) && gpuTier[dt]) {
				continue
			}
			p := Prediction{L: c.L, Tier: c.Tier, Sim: c.Sim, Device: dk, GPU: gpu.P50, Measured: meas.P50}
			if d := analysis.Summarize(analysis.Column(sgroups[sweepCell{dk, c.L}], analysis.Seconds)); d.N > 0 {
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

func writePredictions(w io.Writer, runs []*analysis.Run) {
	var preds []Prediction
	var pairs int
	for _, s := range runs {
		if len(s.Rows("sweep")) == 0 {
			continue
		}
		for _, p := range runs {
			if len(p.Rows("probe")) == 0 {
				continue
			}
			pairs++
			preds = append(preds, Predict(s.Rows("sweep"), p.Rows("probe"))...)
		}
	}
	if pairs == 0 {
		return // the missing suite is already said
	}
	paragraph(w, "## Predicted vs measured hit TTFT")
	if len(preds) == 0 {
		paragraph(w, "No prefix length has both a verified GPU hit and a verified cpu or remote hit with a device-level fetch of the matching tier (host for cpu, remote for remote) at that L, so the model cannot be tested on these results.")
		return
	}
	paragraph(w, "Model: hit TTFT = GPU-hit TTFT + device-level fetch time at the same L (cpu ← host tier, remote ← remote tier). A large error means the fetch is not what the server pays on a hit.")
	t := newTable("L", "hit tier", "device fetch", "GPU TTFT", "fetch", "predicted", "measured", "error")
	for _, p := range preds {
		tier := p.Tier
		if p.Sim {
			tier += " (simulated)"
		}
		fetch := fmtSec(p.Fetch)
		if p.FetchFrom == "model" {
			fetch += " " + t.note("no sweep sample at this L: fitted model")
		}
		errPct := fmtPct(p.ErrPct)
		if math.IsNaN(p.ErrPct) {
			errPct = t.dash("measured TTFT is zero")
		}
		dev := p.Device.Label()
		if analysis.IsStandIn(p.Device.Backend) {
			dev += " " + t.note("device fetch measured on the host stand-in (a CPU copy, not PCIe or RDMA into a GPU): the test of the model is illustrative only")
		}
		t.add(fmtTokens(p.L), tier, dev, fmtSec(p.GPU), fetch, fmtSec(p.Predicted), fmtSec(p.Measured), errPct)
	}
	t.write(w)
}
