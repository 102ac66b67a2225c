// Package mesh is kvtier mesh: the matrix of KV transfer bandwidth
// between every pair of ranks of a cluster, intra- and inter-node, run
// under the cluster's own launcher (srun, mpirun, a torchrun-style
// environment). Every rank serves a pool as kvtier serve does; ranks
// meet at a coordinator (rank 0), which schedules the pairs (pairwise,
// one at a time, or ring, all neighbours at once), has each destination
// rank time its reads with MB2's Measurer and Sampler, and writes every
// row, the matrix and the ranks' manifests.
package mesh

import (
	"slices"

	"github.com/kvtier/kvtier/harness/transfer"
	"github.com/kvtier/kvtier/results"
)

// Files of a mesh run, written by rank 0.
const (
	File       = "mesh.csv"        // one row per sample, like transfer.csv plus the pair
	MatrixFile = "mesh_matrix.csv" // one row per cell: p50 GB/s of src → dst per direction, layout and size
	RanksFile  = "mesh_ranks.json" // every rank's launch, address, GPU, NIC and manifest
)

// Pair labels (the pair column).
const (
	PairIntra = "intra" // both ranks on one node
	PairInter = "inter" // different nodes
)

// Patterns of a schedule.
const (
	Pairwise = "pairwise" // one pair moves data at a time
	Ring     = "ring"     // every rank reads from its neighbour at once
)

// pairColumns follow transfer's columns in mesh.csv.
var pairColumns = []string{
	"src_rank", "dst_rank", // where the data comes from and goes: load, the pool read from and the rank reading; store, the rank writing and the pool written into
	"src_node", "dst_node",
	"pair",               // intra | inter
	"pattern",            // pairwise | ring
	"src_nic", "dst_nic", // RDMA device (verbs) or network interface (tcp)
	"src_gpu_nic", "dst_gpu_nic", // PCIe distance GPU↔NIC at each end, "" without a GPU
	"launcher",
}

// MatrixColumns is the header of mesh_matrix.csv.
var MatrixColumns = []string{
	"pattern", "route", "direction", "layout", "bytes", "src_rank", "dst_rank", "src_node", "dst_node",
	"pair", "path", "transport", "n", "gb_per_s_p50", "gb_per_s_p10", "gb_per_s_p90", "line_gb_per_s",
	"verified", "errors", "skipped", "reason",
}

// SummaryKeys are the columns mesh_summary.csv groups by.
var SummaryKeys = []string{"pattern", "direction", "src_rank", "dst_rank", "pair", "path", "transport", "layout", "bytes"}

// Suite declares the mesh's results.
var Suite = results.Suite{
	Name: "mesh", Title: "Transfer matrix: intra- vs inter-node", Command: "kvtier mesh", Order: 45,
	Files: []results.File{
		{Name: File, Columns: append(slices.Clone(transfer.Suite.Main().Columns), pairColumns...), Keys: SummaryKeys, Metric: "time"},
		{Name: MatrixFile, Columns: MatrixColumns, Raw: true},
	},
}

func init() { results.RegisterSuite(Suite) }
