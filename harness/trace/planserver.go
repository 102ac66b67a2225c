package trace

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/replayer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
)

// RoleServer is the Role of the configuration a server runs with: what
// a plan against --base-url checks, since kvtier cannot resize it.
const RoleServer = "server"

// A planServer is the server plan --base-url measures and checks
// against: its URL, and once measured, the capacities it runs with
// (Config; nil where its GPU pool is unknown, with why).
type planServer struct {
	url    string
	http   *http.Client // nil: clients of their own
	config Config
	why    string
}

// rowSink keeps the rows written to it.
type rowSink struct{ rows []results.Row }

func (s *rowSink) Write(r results.Row) error { s.rows = append(s.rows, r); return nil }
func (s *rowSink) Close() error              { return nil }

// measure measures the costs against the server the way kvtier probe
// does (miss, GPU hit, CPU hit, each verified by the server's counters:
// the probe suite's harness.CostProbe) at lengths covering in, capped by
// the server's context, in real time. It learns the capacities the
// server runs with on the way.
func (s *planServer) measure(ctx context.Context, in results.Stats, bytesPerToken int64) (*analysis.PlanCosts, []int64, error) {
	probe := harness.LookupCostProbe()
	if probe == nil {
		return nil, nil, errors.New("no cost probe: kvtier was built without its probe suite")
	}
	res, err := probe(ctx, harness.CostProbeRequest{URL: s.url, HTTP: s.http, Lengths: func(maxLen int) []int {
		limit := serverLengthLimit
		if maxLen > 0 {
			limit = min(limit, max(maxLen-16, 2))
		}
		return intLengths(SimLengths(in, limit))
	}})
	if err != nil {
		return nil, nil, err
	}
	s.learn(res, bytesPerToken)
	costs, err := analysis.LoadPlanCosts(redact.URL(s.url), nil, res.Rows)
	return costs, int64Lengths(res.Lengths), err
}

// serverLengthLimit caps the lengths of a plan's costs against a server
// whose context is unknown, as --sim's.
const serverLengthLimit = 131072 - 1024

// learn records the capacities the server runs with: its GPU pool and,
// where it says, its CPU store.
func (s *planServer) learn(res harness.CostProbeResult, bytesPerToken int64) {
	if res.GPUTokens <= 0 {
		s.why = "the server does not say its GPU KV pool (vllm:cache_config_info): the prediction at its capacity cannot be made"
		return
	}
	s.config = Config{CapacityTiers[0]: res.GPUTokens * bytesPerToken}
	if res.CPUTokens > 0 {
		s.config[CapacityTiers[1]] = res.CPUTokens * bytesPerToken
	}
}

// check replays the sample against the server serially (one request at
// a time in trace order, one output token each), as simCheck does the
// simulator: realized hit from the responses' cached tokens, else the
// server's counters.
func (s *planServer) check(ctx context.Context, sample *checkSample) checkResult {
	w := &replayer.Workload{Name: "sample", Requests: sample.reqs, BlockTokens: sample.reqs[0].BlockTokens}
	cfg := replayer.Config{Suite: PlanSuite.Name, Endpoint: s.url, Dispatch: replayer.DispatchTimestamp,
		Speedup: 1e6, Concurrency: 1, MaxOutput: 1, Timeout: 120 * time.Second, Seed: 1, BlockBytes: kv.ServedBlockBytes, HTTP: s.http}
	rp, err := replayer.New(ctx, cfg, w)
	if err != nil {
		return checkResult{Err: err}
	}
	sum, err := rp.Run(ctx, &rowSink{}, nil)
	if err != nil {
		return checkResult{Err: err}
	}
	if sum.OK < sum.Requests {
		return checkResult{Err: fmt.Errorf("%d of the sample's %s failed", sum.Requests-sum.OK, units.Count(sum.Requests, "request", "requests"))}
	}
	apc := sum.CachedShare
	if math.IsNaN(apc) {
		apc = sum.APC
	}
	if math.IsNaN(apc) {
		return checkResult{Err: errors.New("the server reports neither cached tokens nor prefix-cache counters: " + sum.APCSource)}
	}
	return checkResult{APC: apc, TTFT: sum.TTFT}
}

// intLengths and int64Lengths convert prefix lengths.
func intLengths(ls []int64) []int {
	out := make([]int, len(ls))
	for i, l := range ls {
		out[i] = int(l)
	}
	return out
}

func int64Lengths(ls []int) []int64 {
	out := make([]int64, len(ls))
	for i, l := range ls {
		out[i] = int64(l)
	}
	return out
}
