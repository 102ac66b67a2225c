package mesh

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
)

// writeMesh renders the matrices (one per route, direction, layout and
// size), the intra- against inter-node comparison with the fraction of
// line rate, and what was not measured.
func writeMesh(w io.Writer, r *analysis.Run) {
	keys, stats := analysis.MeshCells(r.Rows(Suite.Name))
	report.Paragraph(w, "Each matrix: p50 GB/s of reads by the destination rank (column) from the source rank's pool (row); intra = both ranks on one node. `err` marks a cell with error rows, `skip` one that could not run, — the diagonal.")
	if meshStores(keys) {
		report.Paragraph(w, "A matrix titled store: p50 GB/s of writes by the source rank (row) into the destination rank's pool (column).")
	}
	type view struct {
		route, direction, layout string
		bytes                    int64
	}
	var views []view
	ranks := map[int]string{}
	var g report.Gaps
	for _, k := range keys {
		v := view{k.Route, k.Direction, k.Layout, k.Bytes}
		if len(views) == 0 || views[len(views)-1] != v {
			views = append(views, v)
		}
		st := stats[k]
		ranks[k.Src], ranks[k.Dst] = st.SrcNode, st.DstNode
		g.Add(fmt.Sprintf("%d→%d %s%s %s", k.Src, k.Dst, k.Route, storeLabel(k.Direction), k.Layout), report.FmtBytes(float64(k.Bytes)), st.Rows)
	}
	order := slices.Sorted(func(yield func(int) bool) {
		for r := range ranks {
			if !yield(r) {
				return
			}
		}
	})
	for _, v := range views {
		fmt.Fprintf(w, "### %s%s, %s, %s\n\n", v.route, storeLabel(v.direction), v.layout, report.FmtBytes(float64(v.bytes)))
		writeMeshMatrix(w, order, ranks, func(src, dst int) *analysis.MeshStat {
			return stats[analysis.MeshCell{Route: v.route, Direction: v.direction, Layout: v.layout, Bytes: v.bytes, Src: src, Dst: dst}]
		})
	}
	writeMeshPairs(w, keys, stats)
	g.Write(w, Suite.Name)
}

// meshStores reports whether any cell is a store.
func meshStores(keys []analysis.MeshCell) bool {
	return slices.ContainsFunc(keys, func(k analysis.MeshCell) bool { return k.Direction != results.DirectionLoad })
}

// storeLabel labels what is not a load (", store"); loads, as before
// stores were measured, carry no label.
func storeLabel(direction string) string {
	if direction == results.DirectionLoad {
		return ""
	}
	return ", " + direction
}

// writeMeshMatrix writes one matrix, sources down, destinations across.
func writeMeshMatrix(w io.Writer, order []int, nodes map[int]string, cell func(src, dst int) *analysis.MeshStat) {
	header := []string{"src \\ dst"}
	for _, d := range order {
		header = append(header, fmt.Sprintf("%d (%s)", d, nodes[d]))
	}
	t := report.NewTable(header...)
	t.Hoist = false // a matrix keeps every column, the same or not
	for _, s := range order {
		row := []string{fmt.Sprintf("%d (%s)", s, nodes[s])}
		for _, d := range order {
			st := cell(s, d)
			switch {
			case s == d:
				row = append(row, report.Dash)
			case st == nil:
				row = append(row, "")
			case st.N > 0 && st.NotOK == 0:
				row = append(row, report.Sig(st.GBps))
			case st.N > 0:
				row = append(row, report.Sig(st.GBps)+" err")
			case hasStatus(st.Rows, results.StatusError):
				row = append(row, "err")
			default:
				row = append(row, "skip")
			}
		}
		t.Add(row...)
	}
	t.Write(w)
	fmt.Fprintln(w)
}

func hasStatus(rows []results.Row, s results.Status) bool {
	return slices.ContainsFunc(rows, func(r results.Row) bool { return r.Status == s })
}

// writeMeshPairs compares intra- and inter-node pairs per route, layout
// and size: the median, lowest and highest of the cells' p50 GB/s, and
// the median's fraction of the line rate where it is known.
func writeMeshPairs(w io.Writer, keys []analysis.MeshCell, stats map[analysis.MeshCell]*analysis.MeshStat) {
	type group struct {
		route, direction, layout string
		bytes                    int64
		pair                     string
	}
	var order []group
	vals, lines := map[group][]float64{}, map[group][]float64{}
	for _, k := range keys {
		st := stats[k]
		if st.N == 0 {
			continue
		}
		gk := group{k.Route, k.Direction, k.Layout, k.Bytes, st.Pair}
		if _, seen := vals[gk]; !seen {
			order = append(order, gk)
		}
		vals[gk] = append(vals[gk], st.GBps)
		if st.LineGBps > 0 {
			lines[gk] = append(lines[gk], st.LineGBps)
		}
	}
	if len(order) == 0 {
		report.Paragraph(w, "No ok rows in mesh.csv.")
		return
	}
	report.Paragraph(w, "### Intra- against inter-node pairs")
	stores := meshStores(keys)
	header := []string{"route", "layout", "size", "pair", "pairs", "GB/s median of p50s", "lowest", "highest", "line frac"}
	if stores {
		header = slices.Insert(header, 1, "direction")
	}
	t := report.NewTable(header...)
	for _, gk := range order {
		d := analysis.Summarize(vals[gk])
		var frac string
		if l := analysis.Summarize(lines[gk]); l.N > 0 && l.P50 > 0 {
			frac = fmt.Sprintf("%.2f", d.P50/l.P50)
		} else {
			frac = t.Dash("line rate unknown (tcp, no --line-rate)")
		}
		cells := []string{gk.route, gk.layout, report.FmtBytes(float64(gk.bytes)), gk.pair, fmt.Sprint(d.N), report.Sig(d.P50), report.Sig(d.Min), report.Sig(d.Max), frac}
		if stores {
			cells = slices.Insert(cells, 1, gk.direction)
		}
		t.Add(cells...)
	}
	t.Write(w)
	fmt.Fprintln(w)
}

// meshHeadline is the mesh's intra- against inter-node pairs at the
// largest size: the median over the pairs of each pair's p50 GB/s.
func meshHeadline(runs []*analysis.Run) (string, string) {
	keys, stats := analysis.MeshCells(report.AllRows(runs, Suite.Name))
	var size int64
	for _, k := range keys {
		if k.Route == "net" && stats[k].N > 0 {
			size = max(size, k.Bytes)
		}
	}
	if size == 0 {
		return "no pair has an ok row; " + report.StatusCounts(report.AllRows(runs, Suite.Name)), ""
	}
	vals := map[string][]float64{}
	var pairs, layouts []string
	for _, k := range keys {
		st := stats[k]
		if k.Route != "net" || k.Bytes != size || st.N == 0 {
			continue
		}
		if _, seen := vals[st.Pair]; !seen {
			pairs = append(pairs, st.Pair)
		}
		vals[st.Pair] = append(vals[st.Pair], st.GBps)
		if !slices.Contains(layouts, k.Layout) {
			layouts = append(layouts, k.Layout)
		}
	}
	var parts []string
	for _, p := range pairs {
		parts = append(parts, fmt.Sprintf("%s %s GB/s (median of %d pairs' p50)", report.OrDash(p), report.Sig(analysis.Summarize(vals[p]).P50), len(vals[p])))
	}
	return fmt.Sprintf("at %s (%s): %s. %s: intra %s, inter %s GB/s.", report.FmtBytes(float64(size)), strings.Join(layouts, ", "),
		strings.Join(parts, ", "), analysis.Reference, report.Sig(analysis.ReferenceMB2["intra"]), report.Sig(analysis.ReferenceMB2["inter"])), ""
}

// The mesh's report and figures: its matrices and the headline's intra- against
// inter-node rates.
func init() {
	report.RegisterSection(report.Section{Suite: Suite.Name, Write: writeMesh})
	report.RegisterHeadline(report.Headline{Suite: Suite.Name, Write: meshHeadline})
	plots.Register(Suite.Name, drawMeshMatrices)
	plots.Register(Suite.Name, drawMeshPairs)
}
