// Package transfer is MB2: KV transfer bandwidth against kvtier serve
// peers over a sweep of sizes and layouts, intra- and inter-node, into
// host or GPU memory, plus GPU-to-GPU peer copies; every sample is timed
// through the harness's Sampler and written to transfer.csv.
package transfer

import "github.com/kvtier/kvtier/results"

// File is transfer.csv.
const File = "transfer.csv"

// columns follow results.CommonSchema in transfer.csv (tier "remote",
// layout layerwise | blockwise | contiguous).
var columns = []results.Column{
	results.Text(results.DirectionColumn, "load (pulled from the peer) | store (pushed into its pool)"),
	results.Text("peer", `HOST:PORT, "embedded", or "local" for peer copies`),
	results.Text(results.ColPath, "intra | inter | loopback | peercopy, +gpudirect or +bounce into GPU memory"),
	results.Text("gpudirect_reason", "+bounce: why the reads do not land in GPU memory directly (stores: why the writes do not leave from it)"),
	results.Text(results.ColDevice, `NIC (mlx5_0, rxe0), "tcp", or the GPUs of a peer copy`),
	results.Text("device_reason", "verbs: why that NIC (--rdma-device auto: nearest the GPU in use)"),
	results.Int("ib_tc", "", "verbs: the QPs' traffic class (--ib-tc, NCCL_IB_TC)"),
	results.Int("ib_sl", "", "verbs: the QPs' service level (--ib-sl, NCCL_IB_SL)"),
	results.Int("conns", "count", "parallel TCP connections or QPs"),
	results.Text(results.ColSrcMem, "host | gpu: the peer's pool (a store's: its own memory)"),
	results.Text(results.ColDstMem, "host | gpu: where the bytes land (a store's: the peer's pool)"),
	results.Float(results.ColLineGBPerSecond, "GB/s", `NIC line rate (--line-rate, given in Gb/s, divided by 8) or the shaped rate; "" unknown`),
	results.Float(results.ColLineFrac, "fraction", "gb_per_s / line_gb_per_s"),
	results.Float(results.ColT3GiB, "s", "derived: seconds to move 3 GiB at this rep's rate"),
	results.Float(results.ColT11_5GiB, "s", "derived: seconds to move 11.5 GiB at this rep's rate"),
	results.Bool(results.ColVerified, "whether the bytes moved were checked and matched"),
	results.Text("gpu", "the destination GPU (dst_mem=gpu), or both GPUs of a peer copy"),
	results.TimingColumn,
	results.Bool("held", "whether the stream was held until the work was queued"),
}

// SummaryKeys are the columns transfer_summary.csv groups by.
var SummaryKeys = []string{results.DirectionColumn, "peer", results.ColPath, results.ColTransport, results.ColLayout, results.ColBytes, "conns", results.ColDevice}

// Suite declares MB2's results.
var Suite = results.Suite{
	Name: "transfer", Title: "MB2: KV transfer bandwidth", Command: "kvtier transfer", Order: 40,
	Files: []results.File{{Name: File, Columns: columns, Keys: SummaryKeys, Metric: "time"}},
}

func init() { results.RegisterSuite(Suite) }
