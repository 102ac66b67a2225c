package mesh

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/xfer"
)

// Routes of a matrix cell: through the pools' data path (NIC or TCP), or
// over the GPUs' peer path.
const (
	RouteNet      = "net"
	RoutePeerCopy = "peercopy"
)

// A cellKey is one cell of one matrix.
type cellKey struct {
	route, direction, layout string
	bytes                    int64
	src, dst                 int
}

// A cell gathers the rows of one cell.
type cell struct {
	first           results.Row
	gbps            []float64
	line            float64
	verified        int // ok reps that were verified
	errors, skipped int
	reason          string
}

// A collector writes every row to the sample file and keeps what the
// matrix needs; it is safe for concurrent use (ring steps).
type collector struct {
	mu    sync.Mutex
	sink  results.Sink
	cells map[cellKey]*cell
}

func newCollector(sink results.Sink) *collector {
	return &collector{sink: sink, cells: map[cellKey]*cell{}}
}

// Write writes r and adds it to its cell.
func (c *collector) Write(r results.Row) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.sink.Write(r); err != nil {
		return err
	}
	src, err1 := strconv.Atoi(r.Get(results.ColSrcRank))
	dst, err2 := strconv.Atoi(r.Get(results.ColDstRank))
	if err1 != nil || err2 != nil {
		return nil
	}
	route := RouteNet
	if r.Get(results.ColPath) == xfer.PathPeerCopy {
		route = RoutePeerCopy
	}
	k := cellKey{route, r.Direction(), r.Layout, r.Bytes, src, dst}
	x := c.cells[k]
	if x == nil {
		x = &cell{first: r}
		c.cells[k] = x
	}
	switch r.Status {
	case results.StatusOK:
		x.gbps = append(x.gbps, r.GBps)
		if r.Get(results.ColVerified) == "true" {
			x.verified++
		}
		if lg := r.Float(results.ColLineGBPerSecond); lg > 0 {
			x.line = lg
		}
	case results.StatusError:
		x.errors++
		x.reason = cmp.Or(x.reason, r.Reason)
	case results.StatusSkipped:
		x.skipped++
		x.reason = cmp.Or(x.reason, r.Reason)
	}
	return nil
}

// Close leaves the sink to its owner.
func (c *collector) Close() error { return nil }

// matrix returns one row per cell, in order of route, direction, layout,
// size, source and destination, with MatrixColumns.
func (c *collector) matrix() []results.Row {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := slices.SortedFunc(maps.Keys(c.cells), func(a, b cellKey) int {
		return cmp.Or(strings.Compare(a.route, b.route), strings.Compare(a.direction, b.direction), strings.Compare(a.layout, b.layout),
			cmp.Compare(a.bytes, b.bytes), cmp.Compare(a.src, b.src), cmp.Compare(a.dst, b.dst))
	})
	out := make([]results.Row, 0, len(keys))
	for _, k := range keys {
		out = append(out, c.cells[k].row(k))
	}
	return out
}

// row renders a cell as a matrix row.
func (x *cell) row(k cellKey) results.Row {
	f := x.first
	r := results.Row{Layout: k.layout, Bytes: k.bytes, Transport: f.Transport, Reason: x.reason, Extra: map[string]string{}}
	for _, col := range []string{"pattern", "src_rank", "dst_rank", "src_node", "dst_node", "pair", "path"} {
		r.Extra[col] = f.Get(col)
	}
	r.Set(results.ColRoute, k.route)
	r.Set(results.DirectionColumn, k.direction)
	st := results.Describe(x.gbps)
	r.Set("n", st.N)
	r.Set("gb_per_s_p50", st.P50)
	r.Set("gb_per_s_p10", st.P10)
	r.Set("gb_per_s_p90", st.P90)
	if x.line > 0 {
		r.Set(results.ColLineGBPerSecond, x.line)
	}
	r.Set(results.ColVerified, st.N > 0 && x.verified > 0)
	r.Set("errors", x.errors)
	r.Set(results.ColSkipped, x.skipped)
	return r
}

// schedule lists the steps of a mesh of n ranks: pairwise, one task per
// step for each ordered pair (source-major); ring, per layout and size
// one step in which every rank i reads from (and writes into) rank i+1.
// Every task runs dirs; intra pairs carry peerCopy.
func schedule(pattern string, members []Member, dirs []tiers.Direction, layouts []string, sizes []int64, peerCopy bool) [][]Task {
	n := len(members)
	var steps [][]Task
	task := func(src, dst int, ls []string, ss []int64) Task {
		return Task{Step: len(steps), Pattern: pattern, Src: src, Dst: dst, Directions: dirs, Layouts: ls, Sizes: ss,
			PeerCopy: peerCopy && pairOf(members[src], members[dst]) == PairIntra}
	}
	if pattern == Ring {
		for _, l := range layouts {
			for _, s := range sizes {
				var step []Task
				for dst := 0; dst < n && n > 1; dst++ {
					t := task((dst+1)%n, dst, []string{l}, []int64{s})
					t.PeerCopy = false
					step = append(step, t)
				}
				steps = append(steps, step)
			}
		}
		return steps
	}
	for src := range n {
		for dst := range n {
			if src != dst {
				steps = append(steps, []Task{task(src, dst, layouts, sizes)})
			}
		}
	}
	return steps
}
