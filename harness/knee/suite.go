package knee

import (
	"slices"

	"github.com/kvtier/kvtier/harness/replay"
	"github.com/kvtier/kvtier/results"
)

// The files of the knee suite.
const (
	RequestsFile = "knee_requests.csv" // one row per request, every capacity
	File         = "knee.csv"          // one row per capacity
	CurveFile    = "knee_curve.csv"    // raw: the LRU model's hit ratio against capacity
)

// serverColumns follow replay's columns in the knee's files.
var serverColumns = []string{
	"server",     // "embedded sim", or the server command's program
	"server_log", // the server's stdout and stderr, a file of the results directory
}

// RequestColumns follow results.CommonColumns in knee_requests.csv.
var RequestColumns = append(slices.Clone(replay.RequestColumns), serverColumns...)

// Columns follow results.CommonColumns in knee.csv: a replay run's
// columns, per capacity.
var Columns = append(slices.Clone(replay.RunColumns), serverColumns...)

// CurveColumns are the whole header of knee_curve.csv.
var CurveColumns = []string{
	"trace", "order", // timestamp | sessions (round robin): the order the model was fed
	"block_size", "capacity_blocks", "capacity_tokens", "capacity_bytes",
	"hit_ratio", "predicted",
}

// Suite declares what kvtier knee writes.
var Suite = results.Suite{
	Name: "knee", Title: "Capacity knee: realized APC and TTFT against GPU KV capacity", Command: "kvtier knee", Order: 75,
	Files: []results.File{
		{
			Name: RequestsFile, Columns: RequestColumns, Keys: []string{"gpu_blocks", "server"},
			Match: []string{"gpu_blocks", "simulated"}, Metric: "TTFT", Value: "ttft_s",
		},
		{Name: File, Columns: Columns},
		{Name: CurveFile, Columns: CurveColumns, Raw: true},
	},
}

func init() { results.RegisterSuite(Suite) }
