package transfer

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"gonum.org/v1/plot/plotter"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
)

func drawTransfer(dir string, run *analysis.Run, res *plots.Result) error {
	type key struct{ path, transport, layout, mem string }
	rows := run.Rows(Suite.Name)
	keys, groups := analysis.GroupBy(rows, func(r results.Row) key { return key{r.Get(results.ColPath), r.Transport, r.Layout, memOf(r)} },
		func(a, b key) int {
			return cmp.Or(cmp.Compare(a.path, b.path), cmp.Compare(a.transport, b.transport), cmp.Compare(a.layout, b.layout), cmp.Compare(a.mem, b.mem))
		})
	lines := map[float64]string{}
	for _, r := range rows {
		if lg := r.Float(results.ColLineGBPerSecond); lg > 0 && analysis.OK(r) {
			lines[lg] = r.Get(results.ColDevice)
		}
	}
	ss := plots.SeriesOf(keys, groups, func(k key) string {
		return analysis.JoinNonEmpty(" / ", k.path, k.transport, k.layout, k.mem)
	}, plots.BytesX, plots.OKGBps)
	f, err := plots.SeriesFigure(res, ss, "transfer.csv has no ok rows with a rate: bandwidth plot not drawn",
		"MB2: KV transfer bandwidth vs size (path / transport / layout / memory)", "transfer size", "bandwidth (GB/s)")
	if f == nil || err != nil {
		return err
	}
	for _, lr := range slices.Sorted(maps.Keys(lines)) {
		name := fmt.Sprintf("line rate %.3g GB/s", lr)
		if dev := lines[lr]; dev != "" {
			name += " (" + dev + ")"
		}
		if err := f.HLine(lr, name); err != nil {
			return err
		}
	}
	if err := drawTransferReference(f); err != nil {
		return err
	}
	f.LogX(plots.BytesLabel, true)
	f.TicksAt(plots.AllX(ss), plots.BytesLabel)
	f.LinearY(plots.PlainLabel)
	return plots.Emit(dir, "transfer_bw", f, res)
}

// drawTransferReference draws the reference's bandwidth per path across
// the figure's sizes: the reference gives one rate per path, not one per
// size.
func drawTransferReference(f *plots.Figure) error {
	xmin, xmax := f.XRange()
	paths := slices.Sorted(maps.Keys(analysis.ReferenceMB2))
	for j, path := range paths {
		gb := analysis.ReferenceMB2[path]
		pts := plotter.XYs{{X: xmin, Y: gb}, {X: xmax, Y: gb}}
		name := fmt.Sprintf("%s %s GB/s (mean over sizes): %s", path, units.FormatSig(gb), analysis.Reference)
		if err := f.RefLine(pts, plots.Styles-1-j, name); err != nil {
			return err
		}
	}
	return nil
}

func memOf(r results.Row) string {
	s, d := r.Get(results.ColSrcMem), r.Get(results.ColDstMem)
	if s == "" && d == "" {
		return ""
	}
	return s + "→" + d
}
