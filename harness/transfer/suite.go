// Package transfer is MB2: KV transfer bandwidth against kvtier serve
// peers over a sweep of sizes and layouts, intra- and inter-node, into
// host or GPU memory, plus GPU-to-GPU peer copies; every sample is timed
// through the harness's Sampler and written to transfer.csv.
package transfer

import "github.com/kvtier/kvtier/results"

// File is transfer.csv.
const File = "transfer.csv"

// columns follow results.CommonColumns in transfer.csv (tier "remote",
// layout layerwise | blockwise | contiguous).
var columns = []string{
	"direction",        // load (pulled from the peer) | store (pushed into its pool)
	"peer",             // HOST:PORT, "embedded", or "local" for peer copies
	"path",             // intra | inter | loopback | peercopy, +gpudirect or +bounce into GPU memory
	"gpudirect_reason", // +bounce: why the reads do not land in GPU memory directly
	"device",           // NIC (mlx5_0, rxe0), "tcp", or the GPUs of a peer copy
	"device_reason",    // verbs: why that NIC (--rdma-device auto: nearest the GPU in use)
	"ib_tc",            // verbs: the QPs' traffic class (--ib-tc, NCCL_IB_TC)
	"ib_sl",            // verbs: the QPs' service level (--ib-sl, NCCL_IB_SL)
	"conns",            // parallel TCP connections or QPs
	"src_mem",          // host | gpu (the peer's pool; a store's own memory)
	"dst_mem",          // host | gpu (a store's: the peer's pool)
	"line_gb_per_s",    // NIC line rate in GB/s (or the shaped rate), "" unknown
	"line_frac",        // gb_per_s / line_gb_per_s
	"t_3gib_s",         // derived: seconds to move 3 GiB at this rep's rate
	"t_11_5gib_s",      // derived: seconds to move 11.5 GiB at this rep's rate
	"verified",
	"gpu",    // the destination GPU (dst_mem=gpu), or both GPUs of a peer copy
	"timing", // events | clock
	"held",   // whether the stream was held until the work was queued
}

// SummaryKeys are the columns transfer_summary.csv groups by.
var SummaryKeys = []string{"direction", "peer", "path", "transport", "layout", "bytes", "conns", "device"}

// Suite declares MB2's results.
var Suite = results.Suite{
	Name: "transfer", Title: "MB2: KV transfer bandwidth", Command: "kvtier transfer", Order: 40,
	Files: []results.File{{Name: File, Columns: columns, Keys: SummaryKeys, Metric: "time"}},
}

func init() { results.RegisterSuite(Suite) }
