// Package sweep is the tier sweep: for every layout, tier, copy mode and
// prefix length it fetches a reused KV prefix from the tier through the
// harness's Sampler and writes one row per measured sample to sweep.csv.
package sweep

import (
	"slices"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
)

// File is sweep.csv.
const File = "sweep.csv"

// columns follow results.CommonSchema in sweep.csv; the tiers' own
// attribute columns (tiers.Spec.Columns) follow these.
var columns = []results.Column{
	results.Text(results.DirectionColumn, "load (the tier into the working pool) | store (the working pool into the tier)"),
	results.Text(results.ColDevice, `what did the work: "cpu (host stand-in)", "NVIDIA H200 [0000:19:00.0]"`),
	results.Text(results.ColGPU, `CUDA ordinal; "all" on --gpu all's aggregate rows; "" on the host backend`),
	results.Text(results.ColCopy, `percopy | batch | contiguous ("" for recompute)`),
	results.Text(results.ColSrcMem, "where the bytes came from: device | pinned | pageable | peer | disk | pagecache"),
	results.Text(results.ColDstMem, "where they went: device | pinned | pageable | peer | disk | pagecache; the host stand-in's device side is pageable"),
	results.Text(results.ColPath, "remote: loopback | intra | inter; cuda remote: gpudirect | bounce; disk: o_direct | buffered (O_DIRECT taken as buffered I/O: ext4 data=journal) | pagecache [+bounce] | gpudirect"),
	results.Text("gpudirect_reason", "remote path bounce: why the reads do not land in GPU memory directly"),
	results.TimingColumn,
	results.Bool("held", "true when the stream was held until the plan was queued"),
	results.Int("repeat", "count", "fetches timed back to back in one sample (plans under 1 ms); seconds are per fetch"),
	results.Bool(results.ColVerified, `whether the bytes were checked and matched; "" when not checked on this rep`),
	results.Int(results.ColFLOPS, "FLOP", "recompute: floating-point operations of the prefill"),
	results.Float(results.ColTFLOPS, "TFLOP/s", "recompute: achieved rate"),
	results.Text(results.ColComputeDtype, "recompute: bf16 | fp32"),
	results.Float(results.ColLinkGBPerSecond, "GB/s", `payload limit of the link (PCIe, NIC), "" unknown`),
	results.Float(results.ColLinkFrac, "fraction", "gb_per_s / link_gb_per_s"),
	results.Int("seed", "", "the seed of the data written and verified"),
}

// SummaryKeys are the columns sweep_summary.csv groups by.
var SummaryKeys = []string{results.DirectionColumn, results.ColTier, results.ColLayout, results.ColCopy, results.ColBackend, results.ColTransport, results.ColPrefixTokens, results.ColPath, results.ColSrcMem, results.ColGPU, analysis.ColSync}

// Columns returns sweep.csv's columns after the common ones: the sweep's
// own, then every registered tier's attribute columns, each once.
func Columns() []results.Column {
	cols := slices.Clone(columns)
	for _, s := range tiers.All() {
		for _, c := range s.Columns {
			if !slices.Contains(results.Names(cols), c.Name) && !slices.Contains(results.CommonColumns, c.Name) {
				cols = append(cols, c)
			}
		}
	}
	return cols
}

// Suite declares the sweep's results.
var Suite = results.Suite{
	Name: "sweep", Title: "Device tiers", Command: "kvtier sweep", Order: 10,
	Files: []results.File{{Name: File, Columns: Columns(), Keys: SummaryKeys, Metric: "time"}},
}

func init() { results.RegisterSuite(Suite) }
