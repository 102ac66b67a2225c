package replay

import (
	"github.com/kvtier/kvtier/replayer"
	"github.com/kvtier/kvtier/results"
)

// The files of the replay suite.
const (
	File    = "replay.csv"     // one row per request
	RunFile = "replay_run.csv" // one row per run
)

// Suite declares what kvtier replay writes.
var Suite = results.Suite{
	Name: "replay", Title: "Replay: a workload against a live server", Command: "kvtier replay", Order: 70,
	Files: []results.File{
		{
			Name: File, Columns: replayer.RequestColumns, Keys: []string{results.ColTrace, results.ColDispatch, results.ColEndpoint},
			Match: []string{results.ColTrace, results.ColDispatch, results.ColSimulated}, Metric: "TTFT", Value: results.ColTTFT,
		},
		{Name: RunFile, Columns: replayer.RunColumns},
	},
}

func init() { results.RegisterSuite(Suite) }
