package probe

import (
	"cmp"
	"fmt"
	"slices"

	"gonum.org/v1/plot/plotter"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

func drawProbe(dir string, run *analysis.Run, res *plots.Result) error {
	type key struct {
		tier string
		sim  bool
	}
	keys, groups := analysis.GroupBy(run.Rows(Suite.Name), func(r results.Row) key {
		return key{r.Tier, r.Get(results.ColSimulated) == "true"}
	}, func(a, b key) int {
		return cmp.Or(cmp.Compare(slices.Index(tierspec.ProbeNames(), a.tier), slices.Index(tierspec.ProbeNames(), b.tier)), cmp.Compare(a.tier, b.tier), analysis.CompareBool(a.sim, b.sim))
	})
	var ss []plots.Series
	colour := map[string]int{} // tier -> the colour of its first series
	for _, k := range keys {
		label := fmt.Sprintf("%s (http)", figureTierName(k.tier))
		if k.sim {
			label = fmt.Sprintf("%s (http, simulated)", figureTierName(k.tier))
		}
		s := plots.Collect(label, groups[k], plots.PrefixX, func(r results.Row) (float64, bool) {
			return analysis.ProbeTTFT(r), analysis.ProbeCounted(r)
		})
		if len(s.X) > 0 {
			if _, seen := colour[k.tier]; !seen {
				colour[k.tier] = len(ss)
			}
			ss = append(ss, s)
		}
	}
	f, err := plots.SeriesFigure(res, ss, "probe.csv has no verified ok rows: TTFT curve not drawn",
		"HTTP four tiers: time to first token of a reused prefix", "prefix length L (tokens)", "time to first token")
	if f == nil || err != nil {
		return err
	}
	xs := plots.AllX(ss)
	for _, tier := range tierspec.ProbeNames() {
		i, seen := colour[tier]
		if !seen {
			i = len(ss) + len(colour)
			colour[tier] = i
		}
		var pts plotter.XYs
		for _, ref := range analysis.ReferenceTTFT {
			pts = append(pts, plotter.XY{X: float64(ref.L), Y: ref.Tier(tier)})
			xs = append(xs, float64(ref.L))
		}
		if err := f.RefLine(pts, i, figureTierName(tier)+": "+analysis.Reference); err != nil {
			return err
		}
	}
	f.LogX(plots.TokensLabel, true)
	f.TicksAt(xs, plots.TokensLabel)
	f.LogY(plots.SecLabel)
	return plots.Emit(dir, "probe_ttft", f, res)
}

// figureTierName is an HTTP tier's name in the figures' legends.
func figureTierName(t string) string {
	if d, ok := tierspec.Lookup(t); ok && d.Probe == t && d.ProbeLabel != "" {
		return d.ProbeLabel
	}
	return t
}
