// Package sweep is the tier sweep: for every layout, tier, copy mode and
// prefix length it fetches a reused KV prefix from the tier through the
// harness's Sampler and writes one row per measured sample to sweep.csv.
package sweep

import (
	"slices"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
)

// File is sweep.csv.
const File = "sweep.csv"

// columns follow results.CommonColumns in sweep.csv; the tiers' own
// attribute columns (tiers.Spec.Columns) follow these.
var columns = []string{
	"direction",        // load | store (results.DirectionColumn)
	"device",           // "cpu (host stand-in)", "NVIDIA H200 [0000:19:00.0]"
	"gpu",              // CUDA ordinal; "all" on --gpu all's aggregate rows; "" on the host backend
	"copy",             // percopy | batch | contiguous ("" for recompute)
	"src_mem",          // device | pinned | pageable | peer | disk | pagecache
	"dst_mem",          // device | pinned | pageable
	"path",             // remote: loopback | intra | inter; cuda remote: gpudirect | bounce; disk: o_direct | pagecache [+bounce] | gpudirect
	"gpudirect_reason", // remote path bounce: why the reads do not land in GPU memory directly
	"timing",           // events | clock
	"held",             // true when the stream was held until the plan was queued
	"repeat",           // fetches timed back to back in one sample (plans under 1 ms); seconds are per fetch
	"verified",         // true | false | "" (not checked on this rep)
	"flops",            // recompute: FLOPs of the prefill
	"tflops",           // recompute: achieved TFLOP/s
	"compute_dtype",    // recompute: bf16 | fp32
	"link_gb_per_s",    // payload limit of the link, "" unknown
	"link_frac",        // gb_per_s / link_gb_per_s
	"seed",
}

// SummaryKeys are the columns sweep_summary.csv groups by.
var SummaryKeys = []string{"direction", "tier", "layout", "copy", "backend", "transport", "prefix_tokens", "path", "src_mem", "gpu"}

// Columns returns sweep.csv's columns after the common ones: the sweep's
// own, then every registered tier's attribute columns, each once.
func Columns() []string {
	cols := slices.Clone(columns)
	for _, s := range tiers.All() {
		for _, c := range s.Columns {
			if !slices.Contains(cols, c) && !slices.Contains(results.CommonColumns, c) {
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
