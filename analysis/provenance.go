package analysis

import (
	"slices"
	"strings"

	"github.com/kvtier/kvtier/results"
)

// Kinds of figure: what every headline line, table heading and plot says
// its numbers are. A row's kind comes from its own columns (KindOf).
const (
	Measured  = "measured"
	StandIn   = "host stand-in"
	Simulated = "simulated"
	Predicted = "predicted"
	// Reference marks the figures of docs/reference.md drawn beside
	// kvtier's (ReferenceTTFT, ReferenceMB1).
	Reference = "reference (H20, vLLM 0.18.1)"
)

// kindOrder is the order kinds are listed in.
var kindOrder = []string{Measured, StandIn, Simulated, Predicted, Reference}

// kindNotes say in a few words what a kind means, for plots' subtitles
// and the report's legend.
var kindNotes = map[string]string{
	Measured:  "measured",
	StandIn:   "host stand-in: CPU memory, not a GPU",
	Simulated: "simulated: kvtier sim, not vLLM",
	Predicted: "predicted by a model, not measured",
	Reference: Reference,
}

// KindOf returns what a row's figures are: predicted (predicted=true),
// simulated (simulated=true), measured on the host stand-in (backend
// host), or measured.
func KindOf(r results.Row) string {
	switch {
	case r.Get(results.ColPredicted) == "true":
		return Predicted
	case r.Get(results.ColSimulated) == "true":
		return Simulated
	case IsStandIn(r.Backend):
		return StandIn
	}
	return Measured
}

// KindsOf returns the distinct kinds of the rows' measurements (ok rows;
// every row when none is ok), in a fixed order.
func KindsOf(rows ...[]results.Row) []string {
	seen := map[string]bool{}
	for _, okOnly := range []bool{true, false} {
		for _, rs := range rows {
			for _, r := range rs {
				if !okOnly || r.Status == results.StatusOK {
					seen[KindOf(r)] = true
				}
			}
		}
		if len(seen) > 0 {
			break
		}
	}
	var out []string
	for _, k := range kindOrder {
		if seen[k] {
			out = append(out, k)
		}
	}
	return out
}

// KindLabel joins kinds for a heading: "measured, host stand-in".
func KindLabel(kinds []string) string { return strings.Join(kinds, ", ") }

// KindNote returns the subtitle of a figure of these kinds, each kind
// said with what it means.
func KindNote(kinds []string) string {
	kinds = slices.Clone(kinds)
	slices.SortFunc(kinds, func(a, b string) int { return slices.Index(kindOrder, a) - slices.Index(kindOrder, b) })
	var parts []string
	for _, k := range slices.Compact(kinds) {
		parts = append(parts, kindNotes[k])
	}
	return strings.Join(parts, " · ")
}

// SuiteKinds returns the kinds of every file of the suite in the runs.
func SuiteKinds(runs []*Run, suite results.Suite) []string {
	var rows [][]results.Row
	for _, r := range runs {
		for _, f := range suite.Files {
			rows = append(rows, r.Files[f.Name])
		}
	}
	return KindsOf(rows...)
}
