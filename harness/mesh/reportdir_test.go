package mesh

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
)

// meshRow is one ok row of a mesh run: src → dst of 1 MiB blockwise in
// direction dir ("" writes no direction column: a load).
func meshRow(src, dst, dir string, gbps float64) results.Row {
	r := results.NewRow("mesh")
	r.Status, r.Layout, r.Bytes, r.GBps, r.Transport, r.Backend = results.StatusOK, "blockwise", 1<<20, gbps, "tcp", "host"
	r.Seconds = float64(r.Bytes) / gbps / 1e9
	r.Set("src_rank", src)
	r.Set("dst_rank", dst)
	r.Set("src_node", "n"+src)
	r.Set("dst_node", "n"+dst)
	r.Set("pair", "inter")
	r.Set("path", "inter")
	if dir != "" {
		r.Set(results.DirectionColumn, dir)
	}
	return r
}

// Loads and stores of one pair are cells and matrices of their own, the
// stores labelled; a row without a direction is a load.
func TestMeshStoresApart(t *testing.T) {
	t.Parallel()
	rows := []results.Row{meshRow("0", "1", "", 10), meshRow("1", "0", "load", 11),
		meshRow("0", "1", "store", 3), meshRow("1", "0", "store", 4)}
	keys, stats := analysis.MeshCells(rows)
	if len(keys) != 4 {
		t.Fatalf("%d cells, want 4 (two pairs both ways): %v", len(keys), keys)
	}
	load := stats[analysis.MeshCell{Route: "net", Direction: "load", Layout: "blockwise", Bytes: 1 << 20, Src: 0, Dst: 1}]
	store := stats[analysis.MeshCell{Route: "net", Direction: "store", Layout: "blockwise", Bytes: 1 << 20, Src: 0, Dst: 1}]
	if load == nil || load.GBps != 10 || store == nil || store.GBps != 3 {
		t.Fatalf("0→1 load %+v, store %+v; want 10 and 3 GB/s", load, store)
	}
	var b bytes.Buffer
	writeMesh(&b, &analysis.Run{Files: map[string][]results.Row{"mesh.csv": rows}})
	out := b.String()
	for _, want := range []string{"### net, blockwise, 1 MiB", "### net, store, blockwise, 1 MiB", "A matrix titled store", "| direction |"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	writeMesh(&b, &analysis.Run{Files: map[string][]results.Row{"mesh.csv": rows[:2]}})
	if out := b.String(); strings.Contains(out, "store") || strings.Contains(out, "direction") {
		t.Errorf("a run of loads only speaks of stores:\n%s", out)
	}
}
