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

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/xfer"
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
var pairColumns = []results.Column{
	results.Int(results.ColSrcRank, "", "where the data comes from: load, the rank whose pool is read; store, the rank writing"),
	results.Int(results.ColDstRank, "", "where it goes: load, the rank reading; store, the rank whose pool is written"),
	results.Text(results.ColSrcNode, "the source rank's node (host name)"),
	results.Text(results.ColDstNode, "the destination rank's node (host name)"),
	results.Text(results.ColPair, "intra (both ranks on one node) | inter (different nodes)"),
	results.Text("pattern", "pairwise (one pair moves data at a time) | ring (every rank reads from its neighbour at once)"),
	results.Text("src_nic", "the source's RDMA device (verbs) or network interface (tcp)"),
	results.Text("dst_nic", "the destination's RDMA device (verbs) or network interface (tcp)"),
	results.Text("src_gpu_nic", `PCIe distance GPU↔NIC at the source, "" without a GPU`),
	results.Text("dst_gpu_nic", `PCIe distance GPU↔NIC at the destination, "" without a GPU`),
	results.Text("launcher", "the launcher the ranks ran under: srun, mpirun, torchrun, ..."),
}

// MatrixColumns is the whole header of mesh_matrix.csv: one row per cell,
// the p50 of its ok samples.
var MatrixColumns = []results.Column{
	results.Text("pattern", "pairwise | ring"),
	results.Text(results.ColRoute, "net (through the pools' data path: NIC or TCP) | peercopy (over the GPUs' peer path)"),
	results.Text(results.DirectionColumn, "load | store"),
	results.Text(results.ColLayout, "layerwise | blockwise | contiguous"),
	results.Int(results.ColBytes, "B", "payload bytes of one sample"),
	results.Int(results.ColSrcRank, "", "the source rank"),
	results.Int(results.ColDstRank, "", "the destination rank"),
	results.Text(results.ColSrcNode, "the source rank's node"),
	results.Text(results.ColDstNode, "the destination rank's node"),
	results.Text(results.ColPair, "intra | inter"),
	results.Text(results.ColPath, "intra | inter | loopback, +gpudirect or +bounce into GPU memory"),
	results.Text(results.ColTransport, "tcp | verbs"),
	results.Int("n", "count", "ok samples"),
	results.Float("gb_per_s_p50", "GB/s", "p50 of the ok samples' rates"),
	results.Float("gb_per_s_p10", "GB/s", "p10 of the ok samples' rates"),
	results.Float("gb_per_s_p90", "GB/s", "p90 of the ok samples' rates"),
	results.Float(results.ColLineGBPerSecond, "GB/s", `the NIC's line rate, "" unknown`),
	results.Bool(results.ColVerified, "whether every ok sample's bytes were checked and matched"),
	results.Int("errors", "count", "error samples"),
	results.Int(results.ColSkipped, "count", "skipped samples"),
	results.Text(results.ColReason, "the first reason of a skipped or error sample"),
}

// SummaryKeys are the columns mesh_summary.csv groups by.
var SummaryKeys = []string{"pattern", results.DirectionColumn, results.ColSrcRank, results.ColDstRank, results.ColPair, results.ColPath, results.ColTransport, results.ColLayout, results.ColBytes}

// Suite declares the mesh's results.
var Suite = results.Suite{
	Name: "mesh", Title: "Transfer matrix: intra- vs inter-node", Command: "kvtier mesh", Order: 45,
	Files: []results.File{
		{Name: File, Columns: append(slices.Clone(xfer.Columns), pairColumns...), Keys: SummaryKeys, Metric: "time"},
		{Name: MatrixFile, Columns: MatrixColumns, Raw: true},
	},
}

func init() { results.RegisterSuite(Suite) }
