package harness

import (
	"context"
	"net/http"

	"github.com/kvtier/kvtier/results"
)

// A CostProbe measures, at a server, what a plan's costs are fitted to:
// the TTFT of prompts whose prefix the server holds nowhere, in GPU
// memory and in CPU memory, kvtier probe's rows. Suites do not import
// each other: kvtier probe registers its own (RegisterCostProbe) and
// kvtier plan --base-url looks it up.
type CostProbe func(ctx context.Context, req CostProbeRequest) (CostProbeResult, error)

// A CostProbeRequest says what a CostProbe measures.
type CostProbeRequest struct {
	URL  string
	HTTP *http.Client // nil: a client of its own
	// Lengths returns the prompt lengths to measure given the server's
	// context (0 unknown).
	Lengths func(maxModelLen int) []int
}

// A CostProbeResult is what a CostProbe measured: one row per request,
// the lengths measured, and the KV capacities the server says it runs
// with, in tokens (0 unknown).
type CostProbeResult struct {
	Rows                 []results.Row
	Lengths              []int
	GPUTokens, CPUTokens int64
}

var costProbe CostProbe

// RegisterCostProbe sets the CostProbe kvtier plan uses; the probe
// suite calls it in its init.
func RegisterCostProbe(p CostProbe) { costProbe = p }

// LookupCostProbe returns the registered CostProbe; nil when no suite
// registered one.
func LookupCostProbe() CostProbe { return costProbe }
