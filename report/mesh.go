package report

import (
	"fmt"
	"io"
	"slices"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

func init() {
	RegisterSection(Section{Suite: "mesh", Write: writeMesh})
}

// writeMesh renders the matrices (one per route, direction, layout and
// size), the intra- against inter-node comparison with the fraction of
// line rate, and what was not measured.
func writeMesh(w io.Writer, r *analysis.Run) {
	keys, stats := analysis.MeshCells(r.Rows("mesh"))
	Paragraph(w, "Each matrix: p50 GB/s of reads by the destination rank (column) from the source rank's pool (row); intra = both ranks on one node. `err` marks a cell with error rows, `skip` one that could not run, — the diagonal.")
	if meshStores(keys) {
		Paragraph(w, "A matrix titled store: p50 GB/s of writes by the source rank (row) into the destination rank's pool (column).")
	}
	type view struct {
		route, direction, layout string
		bytes                    int64
	}
	var views []view
	ranks := map[int]string{}
	var g Gaps
	for _, k := range keys {
		v := view{k.Route, k.Direction, k.Layout, k.Bytes}
		if len(views) == 0 || views[len(views)-1] != v {
			views = append(views, v)
		}
		st := stats[k]
		ranks[k.Src], ranks[k.Dst] = st.SrcNode, st.DstNode
		g.Add(fmt.Sprintf("%d→%d %s%s %s", k.Src, k.Dst, k.Route, storeLabel(k.Direction), k.Layout), FmtBytes(float64(k.Bytes)), st.Rows)
	}
	order := slices.Sorted(func(yield func(int) bool) {
		for r := range ranks {
			if !yield(r) {
				return
			}
		}
	})
	for _, v := range views {
		fmt.Fprintf(w, "### %s%s, %s, %s\n\n", v.route, storeLabel(v.direction), v.layout, FmtBytes(float64(v.bytes)))
		writeMeshMatrix(w, order, ranks, func(src, dst int) *analysis.MeshStat {
			return stats[analysis.MeshCell{Route: v.route, Direction: v.direction, Layout: v.layout, Bytes: v.bytes, Src: src, Dst: dst}]
		})
	}
	writeMeshPairs(w, keys, stats)
	g.Write(w, "mesh")
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
	t := NewTable(header...)
	t.Hoist = false // a matrix keeps every column, the same or not
	for _, s := range order {
		row := []string{fmt.Sprintf("%d (%s)", s, nodes[s])}
		for _, d := range order {
			st := cell(s, d)
			switch {
			case s == d:
				row = append(row, Dash)
			case st == nil:
				row = append(row, "")
			case st.N > 0 && st.NotOK == 0:
				row = append(row, Sig(st.GBps))
			case st.N > 0:
				row = append(row, Sig(st.GBps)+" err")
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
		Paragraph(w, "No ok rows in mesh.csv.")
		return
	}
	Paragraph(w, "### Intra- against inter-node pairs")
	stores := meshStores(keys)
	header := []string{"route", "layout", "size", "pair", "pairs", "GB/s median of p50s", "lowest", "highest", "line frac"}
	if stores {
		header = slices.Insert(header, 1, "direction")
	}
	t := NewTable(header...)
	for _, gk := range order {
		d := analysis.Summarize(vals[gk])
		var frac string
		if l := analysis.Summarize(lines[gk]); l.N > 0 && l.P50 > 0 {
			frac = fmt.Sprintf("%.2f", d.P50/l.P50)
		} else {
			frac = t.Dash("line rate unknown (tcp, no --line-rate)")
		}
		cells := []string{gk.route, gk.layout, FmtBytes(float64(gk.bytes)), gk.pair, fmt.Sprint(d.N), Sig(d.P50), Sig(d.Min), Sig(d.Max), frac}
		if stores {
			cells = slices.Insert(cells, 1, gk.direction)
		}
		t.Add(cells...)
	}
	t.Write(w)
	fmt.Fprintln(w)
}
