package transfer

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
)

type transferCell struct {
	Path, Transport, Device, Layout, Src, Dst string
	Bytes                                     int64
	Direction                                 string // "" for a load, as in SweepKey
}

func writeTransfer(w io.Writer, r *analysis.Run) {
	keys, groups := analysis.GroupBy(r.Rows(Suite.Name), func(x results.Row) transferCell {
		return transferCell{x.Get(results.ColPath), x.Transport, x.Get(results.ColDevice), x.Layout, x.Get(results.ColSrcMem), x.Get(results.ColDstMem), x.Bytes, analysis.StoreOrEmpty(x)}
	}, func(a, b transferCell) int {
		return cmp.Or(cmp.Compare(a.Direction, b.Direction), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Transport, b.Transport), cmp.Compare(a.Device, b.Device),
			cmp.Compare(a.Layout, b.Layout), cmp.Compare(a.Src, b.Src), cmp.Compare(a.Dst, b.Dst), cmp.Compare(a.Bytes, b.Bytes))
	})
	report.Paragraph(w, "GB/s = payload bytes / time (1 GB = 10⁹ B). Time for 3 GiB and 11.5 GiB is extrapolated from each rep's rate (p50 over reps).")
	t := report.NewTable("path", "transport", "device", "layout", "mem", "size", "n", "GB/s p50", "GB/s p10–p90", "line frac", "time p50", "time p99", "3 GiB p50", "11.5 GiB p50")
	var g report.Gaps
	for _, k := range keys {
		rows := groups[k]
		g.Add(analysis.JoinNonEmpty(" ", k.Path, k.Transport, k.Device, k.Layout), report.FmtBytes(float64(k.Bytes)), rows)
		sec := analysis.Summarize(analysis.Column(rows, analysis.Seconds))
		if sec.N == 0 {
			continue
		}
		g := analysis.Summarize(analysis.Column(rows, analysis.GBps))
		frac := transferLineFrac(t, rows, g)
		extrap := func(col string, size float64) string { return transferExtrap(t, rows, col, size) }
		path := analysis.JoinNonEmpty(" ", k.Path, k.Direction)
		if k.Path == "" {
			path = analysis.JoinNonEmpty(" ", t.Dash("path not recorded"), k.Direction)
		}
		mem := k.Src + "→" + k.Dst
		if k.Src == "" && k.Dst == "" {
			mem = t.Dash("memory kinds not recorded")
		}
		gb, gbr := report.Sig(g.P50), report.FmtRange(g.P10, g.P90, report.Sig)
		if g.N == 0 {
			gb = t.Dash("no bytes recorded")
			gbr = gb
		}
		t.Add(path, report.OrDash(k.Transport), report.OrDash(k.Device), report.OrDash(k.Layout), mem, report.FmtBytes(float64(k.Bytes)), fmt.Sprint(sec.N),
			gb, gbr, frac, report.FmtSec(sec.P50), report.FmtSec(sec.P99), extrap(results.ColT3GiB, 3*(1<<30)), extrap(results.ColT11_5GiB, 11.5*(1<<30)))
	}
	if t.Len() == 0 {
		report.Paragraph(w, "No ok rows in transfer.csv.")
	} else {
		t.Write(w)
	}
	g.Write(w, Suite.Name)
}

// transferLineFrac is the fraction of the line rate that g's p50 reached.
func transferLineFrac(t *report.Table, rows []results.Row, g analysis.Dist) string {
	if line := analysis.Summarize(analysis.Column(rows, func(x results.Row) float64 { return x.Float(results.ColLineGBPerSecond) })); line.N > 0 && line.P50 > 0 && g.N > 0 {
		return fmt.Sprintf("%.2f", g.P50/line.P50)
	}
	return t.Dash("line rate unknown (line_gb_per_s empty)")
}

// transferExtrap is the p50 time to move size bytes: col where the row
// recorded it, else extrapolated from the row's rate.
func transferExtrap(t *report.Table, rows []results.Row, col string, size float64) string {
	d := analysis.Summarize(analysis.Column(rows, func(x results.Row) float64 {
		if v := x.Float(col); !math.IsNaN(v) {
			return v
		}
		if x.GBps > 0 {
			return size / (x.GBps * 1e9)
		}
		return math.NaN()
	}))
	if d.N == 0 {
		return t.Dash("no rate to extrapolate from")
	}
	return report.FmtSec(d.P50)
}

// transferHeadline is MB2 at the largest size: per path (intra, inter,
// loopback, ...) the p50 GB/s of its best layout, the line rate and the
// reference's intra and inter rates.
func transferHeadline(runs []*analysis.Run) (string, string) {
	return pathsLine(results.Loads(report.AllRows(runs, Suite.Name)), func(r results.Row) string { return r.Get(results.ColPath) }), ""
}

// pathsLine says the p50 GB/s of each path's best layout at the largest
// size of rows.
func pathsLine(rows []results.Row, path func(results.Row) string) string {
	var size int64
	for _, r := range rows {
		if analysis.OK(r) && r.GBps > 0 {
			size = max(size, r.Bytes)
		}
	}
	if size == 0 {
		return "no ok row with a rate; " + report.StatusCounts(rows)
	}
	type key struct{ path, layout string }
	keys, groups := analysis.GroupBy(rows, func(r results.Row) key { return key{path(r), r.Layout} },
		func(a, b key) int { return cmp.Or(cmp.Compare(a.path, b.path), cmp.Compare(a.layout, b.layout)) })
	best := map[string]key{}
	rate := map[key]float64{}
	var paths []string
	for _, k := range keys {
		var at []results.Row
		for _, r := range groups[k] {
			if r.Bytes == size {
				at = append(at, r)
			}
		}
		g := analysis.Summarize(analysis.Column(at, analysis.GBps))
		if g.N == 0 {
			continue
		}
		rate[k] = g.P50
		if b, seen := best[k.path]; !seen || g.P50 > rate[b] {
			best[k.path] = k
		}
		if !slices.Contains(paths, k.path) {
			paths = append(paths, k.path)
		}
	}
	var parts []string
	for _, p := range paths {
		k := best[p]
		parts = append(parts, fmt.Sprintf("%s %s GB/s (%s)", report.OrDash(p), report.Sig(rate[k]), report.OrDash(k.layout)))
	}
	s := fmt.Sprintf("p50 GB/s at %s, each path's best layout: %s", report.FmtBytes(float64(size)), strings.Join(parts, ", "))
	if line := analysis.Summarize(analysis.Column(rows, func(r results.Row) float64 { return r.Float(results.ColLineGBPerSecond) })); line.N > 0 {
		s += fmt.Sprintf("; line rate %s GB/s", report.Sig(line.P50))
	}
	if !slices.Contains(paths, "intra") && !slices.Contains(paths, "inter") {
		s += "; no intra- or inter-node peer in these results"
	}
	return s + fmt.Sprintf(". %s: intra %s, inter %s GB/s.", analysis.Reference, report.Sig(analysis.ReferenceMB2["intra"]), report.Sig(analysis.ReferenceMB2["inter"]))
}

// The transfer's report and figures: its rate table and the headline's rates per path.
func init() {
	report.RegisterSection(report.Section{Suite: Suite.Name, Write: writeTransfer})
	report.RegisterHeadline(report.Headline{Suite: Suite.Name, Write: transferHeadline})
	plots.Register(Suite.Name, drawTransfer)
}
