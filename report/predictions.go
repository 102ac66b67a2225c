package report

import (
	"io"
	"math"

	"github.com/kvtier/kvtier/analysis"
)

func writePredictions(w io.Writer, runs []*analysis.Run) {
	var preds []analysis.Prediction
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
			preds = append(preds, analysis.Predict(s.Rows("sweep"), p.Rows("probe"))...)
		}
	}
	if pairs == 0 {
		return // the missing suite is already said
	}
	Paragraph(w, "## Predicted vs measured hit TTFT")
	if len(preds) == 0 {
		Paragraph(w, "No prefix length has both a verified GPU hit and a verified cpu or remote hit with a device-level fetch of the matching tier (host for cpu, remote for remote) at that L, so the model cannot be tested on these results.")
		return
	}
	Paragraph(w, "Model: hit TTFT = GPU-hit TTFT + device-level fetch time at the same L (cpu ← host tier, remote ← remote tier). A large error means the fetch is not what the server pays on a hit.")
	t := NewTable("L", "hit tier", "device fetch", "GPU TTFT", "fetch", "predicted", "measured", "error")
	for _, p := range preds {
		tier := p.Tier
		if p.Sim {
			tier += " (simulated)"
		}
		fetch := FmtSec(p.Fetch)
		if p.FetchFrom == "model" {
			fetch += " " + t.Note("no sweep sample at this L: fitted model")
		}
		errPct := FmtPct(p.ErrPct)
		if math.IsNaN(p.ErrPct) {
			errPct = t.Dash("measured TTFT is zero")
		}
		dev := p.Device.Label()
		if analysis.IsStandIn(p.Device.Backend) {
			dev += " " + t.Note("device fetch measured on the host stand-in (a CPU copy, not PCIe or RDMA into a GPU): the test of the model is illustrative only")
		}
		t.Add(FmtTokens(p.L), tier, dev, FmtSec(p.GPU), fetch, FmtSec(p.Predicted), FmtSec(p.Measured), errPct)
	}
	t.Write(w)
}
