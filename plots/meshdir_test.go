package plots_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/kvtier/kvtier/harness/mesh"
	"github.com/kvtier/kvtier/plots"
	"github.com/kvtier/kvtier/results"
)

// A mesh run with loads and stores draws a matrix of each, the store's
// file named so; rows without a direction are drawn as loads.
func TestDrawMeshStores(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := results.CreateCSV(filepath.Join(dir, mesh.File), "src_rank", "dst_rank", "pair", "path", results.DirectionColumn)
	if err != nil {
		t.Fatal(err)
	}
	for i, dirn := range []string{"", "load", "store", "store"} {
		r := results.NewRow("mesh")
		r.Status, r.Layout, r.Bytes, r.Backend, r.Transport = results.StatusOK, "blockwise", 1<<20, "host", "tcp"
		r.GBps = float64(i + 1)
		r.Seconds = float64(r.Bytes) / r.GBps / 1e9
		src, dst := i%2, 1-i%2
		r.Set("src_rank", src)
		r.Set("dst_rank", dst)
		r.Set("pair", "inter")
		r.Set("path", "inter")
		if dirn != "" {
			r.Set(results.DirectionColumn, dirn)
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := plots.Draw(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mesh_matrix_net_blockwise_1048576", "mesh_matrix_net_store_blockwise_1048576", "mesh_intra_inter"} {
		if p := filepath.Join(dir, "plots", name+".svg"); !slices.Contains(res.Files, p) {
			t.Errorf("%s not drawn: %q", p, res.Files)
		}
	}
}
