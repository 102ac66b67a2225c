package knee

import (
	"slices"

	"github.com/kvtier/kvtier/replayer"
	"github.com/kvtier/kvtier/results"
)

// The files of the knee suite.
const (
	RequestsFile = "knee_requests.csv" // one row per request, every capacity
	File         = "knee.csv"          // one row per capacity
	CurveFile    = "knee_curve.csv"    // raw: the LRU model's hit ratio against capacity
)

// serverColumns follow replay's columns in the knee's files.
var serverColumns = []results.Column{
	results.Text(results.ColServer, `"embedded sim", or the server command's program`),
	results.Text("server_log", "the server's stdout and stderr, a file of the results directory"),
}

// RequestColumns follow results.CommonSchema in knee_requests.csv.
var RequestColumns = append(slices.Clone(replayer.RequestColumns), serverColumns...)

// Columns follow results.CommonSchema in knee.csv: a replay run's
// columns, per capacity.
var Columns = append(slices.Clone(replayer.RunColumns), serverColumns...)

// CurveColumns are the whole header of knee_curve.csv.
var CurveColumns = []results.Column{
	results.Text(results.ColTrace, `the workload's trace file, or "generated"`),
	results.Text(results.ColOrder, "timestamp | sessions (round robin): the order the model was fed"),
	results.Int("block_size", "tokens", "the server's block"),
	results.Int(results.ColCapacityBlocks, "blocks", "the GPU KV pool"),
	results.Int(results.ColCapacityTokens, "tokens", "the GPU KV pool"),
	results.Int(results.ColCapacityBytes, "B", `the GPU KV pool; "" when the model's geometry is unknown`),
	results.Float(results.ColHitRatio, "fraction", "the LRU model's hit ratio at this capacity"),
	results.Bool(results.ColPredicted, "always true: the LRU model's"),
}

// Suite declares what kvtier knee writes.
var Suite = results.Suite{
	Name: "knee", Title: "Capacity knee: realized APC and TTFT against GPU KV capacity", Command: "kvtier knee", Order: 75,
	Files: []results.File{
		{
			Name: RequestsFile, Columns: RequestColumns, Keys: []string{results.ColGPUBlocks, results.ColServer},
			Match: []string{results.ColGPUBlocks, results.ColSimulated}, Metric: "TTFT", Value: results.ColTTFT,
		},
		{Name: File, Columns: Columns},
		{Name: CurveFile, Columns: CurveColumns, Raw: true},
	},
}

func init() { results.RegisterSuite(Suite) }
