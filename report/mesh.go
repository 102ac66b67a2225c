package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/kvtier/kvtier/results"
)

func init() {
	RegisterSection(Section{Suite: "mesh", Write: writeMesh})
}

// A MeshCell is one cell of a kvtier mesh matrix: reads by rank Dst from
// rank Src's pool, of one route (net, or peercopy over the GPUs' peer
// path), layout and size.
type MeshCell struct {
	Route, Layout string
	Bytes         int64
	Src, Dst      int
}

// A MeshStat is what the rows of a cell say: the pair label and nodes,
// p50 GB/s over the ok reps (NaN without one), the line rate, and rows
// that are not measurements.
type MeshStat struct {
	Pair, SrcNode, DstNode string
	GBps, LineGBps         float64
	N, NotOK               int
	Rows                   []results.Row
}

// MeshCells groups a mesh run's rows by cell, in order of route, layout,
// size, source and destination.
func MeshCells(rows []results.Row) ([]MeshCell, map[MeshCell]*MeshStat) {
	keys, groups := GroupBy(rows, func(x results.Row) MeshCell {
		route := "net"
		if x.Get("path") == "peercopy" {
			route = "peercopy"
		}
		src, _ := strconv.Atoi(x.Get("src_rank"))
		dst, _ := strconv.Atoi(x.Get("dst_rank"))
		return MeshCell{route, x.Layout, x.Bytes, src, dst}
	}, func(a, b MeshCell) int {
		return cmp.Or(cmp.Compare(a.Route, b.Route), cmp.Compare(a.Layout, b.Layout), cmp.Compare(a.Bytes, b.Bytes),
			cmp.Compare(a.Src, b.Src), cmp.Compare(a.Dst, b.Dst))
	})
	stats := make(map[MeshCell]*MeshStat, len(keys))
	for _, k := range keys {
		rs := groups[k]
		g := Summarize(column(rs, gbps))
		line := Summarize(column(rs, func(x results.Row) float64 { return x.Float("line_gbps") }))
		st := &MeshStat{Pair: rs[0].Get("pair"), SrcNode: rs[0].Get("src_node"), DstNode: rs[0].Get("dst_node"),
			GBps: g.P50, LineGBps: line.P50, N: g.N, Rows: rs}
		if g.N == 0 {
			st.GBps = math.NaN()
		}
		for _, x := range rs {
			if !ok(x) {
				st.NotOK++
			}
		}
		stats[k] = st
	}
	return keys, stats
}

// writeMesh renders the matrices (one per route, layout and size), the
// intra- against inter-node comparison with the fraction of line rate,
// and what was not measured.
func writeMesh(w io.Writer, r *Run) {
	keys, stats := MeshCells(r.Rows("mesh"))
	paragraph(w, "Each matrix: p50 GB/s of reads by the destination rank (column) from the source rank's pool (row); intra = both ranks on one node. `err` marks a cell with error rows, `skip` one that could not run, — the diagonal.")
	type view struct {
		route, layout string
		bytes         int64
	}
	var views []view
	ranks := map[int]string{}
	var g gaps
	for _, k := range keys {
		v := view{k.Route, k.Layout, k.Bytes}
		if len(views) == 0 || views[len(views)-1] != v {
			views = append(views, v)
		}
		st := stats[k]
		ranks[k.Src], ranks[k.Dst] = st.SrcNode, st.DstNode
		g.add(fmt.Sprintf("%d→%d %s %s", k.Src, k.Dst, k.Route, k.Layout), fmtBytes(float64(k.Bytes)), st.Rows)
	}
	order := slices.Sorted(func(yield func(int) bool) {
		for r := range ranks {
			if !yield(r) {
				return
			}
		}
	})
	for _, v := range views {
		fmt.Fprintf(w, "### %s, %s, %s\n\n", v.route, v.layout, fmtBytes(float64(v.bytes)))
		writeMeshMatrix(w, order, ranks, func(src, dst int) *MeshStat { return stats[MeshCell{v.route, v.layout, v.bytes, src, dst}] })
	}
	writeMeshPairs(w, keys, stats)
	g.write(w, "mesh")
}

// writeMeshMatrix writes one matrix, sources down, destinations across.
func writeMeshMatrix(w io.Writer, order []int, nodes map[int]string, cell func(src, dst int) *MeshStat) {
	header := []string{"src \\ dst"}
	for _, d := range order {
		header = append(header, fmt.Sprintf("%d (%s)", d, nodes[d]))
	}
	t := newTable(header...)
	t.hoist = false // a matrix keeps every column, the same or not
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
				row = append(row, sig(st.GBps))
			case st.N > 0:
				row = append(row, sig(st.GBps)+" err")
			case hasStatus(st.Rows, results.StatusError):
				row = append(row, "err")
			default:
				row = append(row, "skip")
			}
		}
		t.add(row...)
	}
	t.write(w)
	fmt.Fprintln(w)
}

func hasStatus(rows []results.Row, s results.Status) bool {
	return slices.ContainsFunc(rows, func(r results.Row) bool { return r.Status == s })
}

// writeMeshPairs compares intra- and inter-node pairs per route, layout
// and size: the median, lowest and highest of the cells' p50 GB/s, and
// the median's fraction of the line rate where it is known.
func writeMeshPairs(w io.Writer, keys []MeshCell, stats map[MeshCell]*MeshStat) {
	type group struct {
		route, layout string
		bytes         int64
		pair          string
	}
	var order []group
	vals, lines := map[group][]float64{}, map[group][]float64{}
	for _, k := range keys {
		st := stats[k]
		if st.N == 0 {
			continue
		}
		gk := group{k.Route, k.Layout, k.Bytes, st.Pair}
		if _, seen := vals[gk]; !seen {
			order = append(order, gk)
		}
		vals[gk] = append(vals[gk], st.GBps)
		if st.LineGBps > 0 {
			lines[gk] = append(lines[gk], st.LineGBps)
		}
	}
	if len(order) == 0 {
		paragraph(w, "No ok rows in mesh.csv.")
		return
	}
	paragraph(w, "### Intra- against inter-node pairs")
	t := newTable("route", "layout", "size", "pair", "pairs", "GB/s median of p50s", "lowest", "highest", "line frac")
	for _, gk := range order {
		d := Summarize(vals[gk])
		var frac string
		if l := Summarize(lines[gk]); l.N > 0 && l.P50 > 0 {
			frac = fmt.Sprintf("%.2f", d.P50/l.P50)
		} else {
			frac = t.dash("line rate unknown (tcp, no --line-rate)")
		}
		t.add(gk.route, gk.layout, fmtBytes(float64(gk.bytes)), gk.pair, fmt.Sprint(d.N), sig(d.P50), sig(d.Min), sig(d.Max), frac)
	}
	t.write(w)
	fmt.Fprintln(w)
}
