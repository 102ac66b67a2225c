package analysis

import (
	"cmp"
	"math"
	"strconv"

	"github.com/kvtier/kvtier/results"
)

// A MeshCell is one cell of a kvtier mesh matrix: data moved from rank
// Src to rank Dst (a load: reads by Dst from Src's pool; a store: writes
// by Src into Dst's pool), of one route (net, or peercopy over the GPUs'
// peer path), direction (load or store; rows without one are loads),
// layout and size.
type MeshCell struct {
	Route, Direction, Layout string
	Bytes                    int64
	Src, Dst                 int
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

// MeshCells groups a mesh run's rows by cell, in order of route,
// direction, layout, size, source and destination.
func MeshCells(rows []results.Row) ([]MeshCell, map[MeshCell]*MeshStat) {
	keys, groups := GroupBy(rows, func(x results.Row) MeshCell {
		route := "net"
		if x.Get(results.ColPath) == "peercopy" {
			route = "peercopy"
		}
		src, _ := strconv.Atoi(x.Get(results.ColSrcRank))
		dst, _ := strconv.Atoi(x.Get(results.ColDstRank))
		return MeshCell{route, x.Direction(), x.Layout, x.Bytes, src, dst}
	}, func(a, b MeshCell) int {
		return cmp.Or(cmp.Compare(a.Route, b.Route), cmp.Compare(a.Direction, b.Direction), cmp.Compare(a.Layout, b.Layout), cmp.Compare(a.Bytes, b.Bytes),
			cmp.Compare(a.Src, b.Src), cmp.Compare(a.Dst, b.Dst))
	})
	stats := make(map[MeshCell]*MeshStat, len(keys))
	for _, k := range keys {
		rs := groups[k]
		g := Summarize(Column(rs, GBps))
		line := Summarize(Column(rs, func(x results.Row) float64 { return x.Float(results.ColLineGBPerSecond) }))
		st := &MeshStat{Pair: rs[0].Get(results.ColPair), SrcNode: rs[0].Get(results.ColSrcNode), DstNode: rs[0].Get(results.ColDstNode),
			GBps: g.P50, LineGBps: line.P50, N: g.N, Rows: rs}
		if g.N == 0 {
			st.GBps = math.NaN()
		}
		for _, x := range rs {
			if !OK(x) {
				st.NotOK++
			}
		}
		stats[k] = st
	}
	return keys, stats
}
