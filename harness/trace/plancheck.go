package trace

import (
	"fmt"
	"slices"

	"github.com/kvtier/kvtier/replayer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/workload"
)

// CheckTokens is the input tokens of the sample a plan's self-check
// replays: the trace's first requests up to this many (all of a smaller
// trace). The simulator holds every prompt of a replay, 8 bytes a
// token.
const CheckTokens = 8 << 20

// A checkSample takes the first requests of a trace, in timestamp
// order, up to a budget of input tokens: what the self-check replays.
type checkSample struct {
	limit, tokens int64
	reqs          []*workload.Request
	seen          int   // requests of the trace
	seenTokens    int64 // input tokens of the trace
}

// take records r and reports whether it is in the sample.
func (s *checkSample) take(r *workload.Request) bool {
	s.seen++
	s.seenTokens += int64(r.Input)
	if s.tokens >= s.limit {
		return false
	}
	c := *r
	c.Hashes = slices.Clone(r.Hashes)
	s.reqs = append(s.reqs, &c)
	s.tokens += int64(r.Input)
	return true
}

// describe says what the sample is: "the first 640 of 12,031 requests
// (6.1 % of the input tokens)", or "all 50 requests".
func (s *checkSample) describe() string {
	if len(s.reqs) == s.seen {
		return fmt.Sprintf("all %s requests", units.Commas(int64(s.seen)))
	}
	return fmt.Sprintf("the first %s of %s requests (%.1f %% of the input tokens)",
		units.Commas(int64(len(s.reqs))), units.Commas(int64(s.seen)), 100*float64(s.tokens)/float64(s.seenTokens))
}

// checkPicks returns the indices in roles of the configurations a
// self-check replays: the knee at share (else the last knee) of the
// second capacity tier at the largest capacity of the first, and that
// configuration without it; with no such knee, the first tier's knee and
// no cache at all.
func checkPicks(cs []Config, roles []Role, share float64) []int {
	for _, tier := range []string{CapacityTiers[1], CapacityTiers[0]} {
		k := pickKnee(cs, roles, tier, share)
		if k < 0 {
			continue
		}
		for i, r := range roles {
			if r.Kind == RoleWithout && r.Tier == tier && (tier == CapacityTiers[0] || cs[i][CapacityTiers[0]] == cs[k][CapacityTiers[0]]) {
				return []int{i, k}
			}
		}
	}
	return nil
}

// pickKnee returns the index of tier's knee at share (else its largest)
// at the largest capacity of the first tier; -1 when there is none.
func pickKnee(cs []Config, roles []Role, tier string, share float64) int {
	best := -1
	better := func(i int) bool {
		a, b := cs[i][CapacityTiers[0]], cs[best][CapacityTiers[0]]
		if tier == CapacityTiers[0] || a == b {
			return roles[best].Knee != share && (roles[i].Knee == share || roles[i].Knee > roles[best].Knee)
		}
		return a > b
	}
	for i, r := range roles {
		if r.Kind == RoleKnee && r.Tier == tier && (best < 0 || better(i)) {
			best = i
		}
	}
	return best
}

// A checkResult is what replaying the sample at one configuration gave.
type checkResult struct {
	APC  float64       // cached input tokens / input tokens
	TTFT results.Stats // per request, modeled seconds
	Err  error         // why the check could not run
}

// simCheck replays the sample serially (each request sent once the one
// before has its first token, one output token each: what the plan's
// per-request prediction models) through a kvtier sim of cfg whose GPU
// pool and CPU store hold the configuration's first and second tiers, on
// its virtual clock.
func simCheck(cfg vllmsim.Config, c Config, bytesPerToken int64, s *checkSample) checkResult {
	bs := cfg.BlockSize
	if bs == 0 {
		bs = vllmsim.DefaultBlockSize
	}
	cfg.BlockSize = bs
	blockBytes := bytesPerToken * int64(bs)
	cfg.GPUBlocks = int(c[CapacityTiers[0]] / blockBytes)
	cfg.CPUBlocks = int(c[CapacityTiers[1]] / blockBytes)
	longest := 0
	for _, r := range s.reqs {
		longest = max(longest, r.Input)
	}
	if need := (longest + bs - 1) / bs; cfg.GPUBlocks < need {
		return checkResult{Err: fmt.Errorf("the GPU pool (%s blocks of %d tokens) cannot hold the sample's longest prompt (%s tokens)",
			units.Commas(int64(cfg.GPUBlocks)), bs, units.Commas(int64(longest)))}
	}
	cfg.MaxModelLen = max(cfg.MaxModelLen, vllmsim.DefaultMaxModelLen, longest+bs)
	gap := 4*vllmsim.EstimateTTFT(cfg, simMiss, longest, 0) + 1
	prompts := replayer.Prompts{Seed: 1, BlockTokens: s.reqs[0].BlockTokens}
	arr := make([]vllmsim.Arrival, len(s.reqs))
	for i, r := range s.reqs {
		arr[i] = vllmsim.Arrival{At: float64(i) * gap, Prompt: prompts.Tokens(r), MaxTokens: 1}
	}
	tr, err := vllmsim.Replay(cfg, arr, func(float64, func(int) bool) bool { return false })
	if err != nil {
		return checkResult{Err: err}
	}
	var cached, input int64
	ttft := make([]float64, len(tr))
	for i, t := range tr {
		if !t.Done || len(t.Tokens) == 0 || t.Tokens[0]-arr[i].At >= gap {
			return checkResult{Err: fmt.Errorf("request %d of the sample did not finish within its %.0f s slot", i+1, gap)}
		}
		ttft[i] = t.Tokens[0] - arr[i].At
		cached += int64(t.Cached)
		input += int64(len(arr[i].Prompt))
	}
	return checkResult{APC: float64(cached) / float64(input), TTFT: results.Describe(ttft)}
}

// PlanCheckFile is the self-check's file of kvtier plan.
const PlanCheckFile = "plan_check.csv"

// PlanCheckColumns follow results.CommonSchema in plan_check.csv: one
// row per configuration checked (seconds = realized TTFT p50), skipped
// with the reason when the check could not run.
var PlanCheckColumns = slices.Concat(
	configColumns,
	[]results.Column{
		results.Text(ColSample, "the requests replayed"),
		results.Int(ColRequests, "count", "requests replayed"),
		results.Text(ColAgainst, "what the sample was replayed against, and how"),
		results.Float(ColPredictedHit, "fraction", "the plan's prefix hit over the sample (LRU model, predicted)"),
		results.Float(ColRealizedHit, "fraction", "cached input tokens / input tokens, as the server or simulator reported them"),
		results.Float(ColPredictedP50, "s", "the plan's TTFT p50 over the sample (predicted)"),
		results.Float(ColPredictedP90, "s", "the plan's TTFT p90 over the sample (predicted)"),
		results.Float(results.ColTTFTP50, "s", "realized TTFT p50"),
		results.Float(results.ColTTFTP90, "s", "realized TTFT p90"),
		results.Text(results.ColCostSource, "the source of the costs the prediction rests on"),
		results.Bool(results.ColSimulated, "the realized figures are the simulator's, in modeled time"),
	},
)

// Columns of plan_check.csv.
const (
	ColSample       = "sample"
	ColRequests     = "requests"
	ColAgainst      = "against"
	ColPredictedHit = "predicted_hit_ratio"
	ColRealizedHit  = "realized_hit_ratio"
	ColPredictedP50 = "predicted_ttft_p50_s"
	ColPredictedP90 = "predicted_ttft_p90_s"
)

// simAgainst says how simCheck replays.
const simAgainst = "kvtier sim, virtual clock: GPU pool and CPU store set to the configuration (the store written through, so predicted as inclusive tiers), requests sent one at a time in trace order, one output token each"

// CheckRows returns the plan_check.csv rows: per configuration checked,
// the plan's prediction over the sample beside what the replay realized,
// or why it could not run.
func CheckRows(res *Result, s *checkSample, pred []PlanResult, got []checkResult, against string) []results.Row {
	var rows []results.Row
	for i, p := range pred {
		r := results.NewRow(PlanSuite.Name)
		r.Backend, r.Model, r.Status = Backend, res.Model, results.StatusOK
		setConfig(&r, res, p)
		r.Set(ColSample, s.describe())
		r.Set(ColRequests, len(s.reqs))
		r.Set(ColAgainst, against)
		r.Set(ColPredictedHit, 1-p.Fraction(p.recomputed()))
		r.Set(ColPredictedP50, p.TTFT.P50)
		r.Set(ColPredictedP90, p.TTFT.P90)
		r.Set(results.ColCostSource, p.Source)
		r.Set(results.ColSimulated, against == simAgainst)
		if g := got[i]; g.Err != nil {
			r.Status, r.Reason = results.StatusSkipped, g.Err.Error()
		} else {
			r.Set(ColRealizedHit, g.APC)
			r.Set(results.ColTTFTP50, g.TTFT.P50)
			r.Set(results.ColTTFTP90, g.TTFT.P90)
			r.Seconds = g.TTFT.P50
		}
		rows = append(rows, r)
	}
	return rows
}
