// Package transfer is MB2: KV transfer bandwidth against kvtier serve
// peers over a sweep of sizes and layouts, intra- and inter-node, into
// host or GPU memory, plus GPU-to-GPU peer copies; every sample is timed
// through the harness's Sampler and written to transfer.csv.
package transfer

import (
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/xfer"
)

// File is transfer.csv.
const File = "transfer.csv"

// SummaryKeys are the columns transfer_summary.csv groups by.
var SummaryKeys = []string{results.DirectionColumn, "peer", results.ColPath, results.ColTransport, results.ColLayout, results.ColBytes, "conns", results.ColDevice}

// Suite declares MB2's results.
var Suite = results.Suite{
	Name: "transfer", Title: "MB2: KV transfer bandwidth", Command: "kvtier transfer", Order: 40,
	Files: []results.File{{Name: File, Columns: xfer.Columns, Keys: SummaryKeys, Metric: "time"}},
}

func init() { results.RegisterSuite(Suite) }
