package xfer

import "github.com/kvtier/kvtier/results"

// Columns follow results.CommonSchema in transfer.csv and mesh.csv (tier "remote",
// layout layerwise | blockwise | contiguous).
var Columns = []results.Column{
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
