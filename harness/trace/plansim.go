package trace

import (
	"fmt"
	"math"
	"slices"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/vllmsim"
)

// SimCostsLabel names where plan --sim's costs come from: measured by
// kvtier against its embedded simulator, in modeled time.
const SimCostsLabel = "kvtier sim, virtual clock"

// Probe tiers of a simulated cost measurement: the probe's names of the
// compute tier and the first two capacity tiers. The replay runs one
// engine, so the remote tier (a producer to pull from) is not measured.
var (
	simMiss = probeName(PlanTiers[len(PlanTiers)-1])
	simGPU  = probeName(CapacityTiers[0])
	simCPU  = probeName(CapacityTiers[1])
)

// probeName is the probe's name of the plan tier plan.
func probeName(plan string) string {
	d, _ := tierspec.Lookup(plan)
	return d.Probe
}

// simRemoteReason is why plan --sim has no remote cost.
const simRemoteReason = "not measured: plan --sim replays one simulated engine on its virtual clock, with no producer to pull from (kvtier probe --sim --tiers remote measures it in real time)"

// SimLengths are the prefix lengths a plan's simulated costs are taken
// at: the input lengths' p10, p50, p90, p99 and maximum, each at most
// limit, each once, at least two.
func SimLengths(in results.Stats, limit int) []int64 {
	var ls []int64
	for _, v := range []float64{in.P10, in.P50, in.P90, in.P99, in.Max} {
		if v >= 1 {
			ls = append(ls, min(int64(math.Ceil(v)), int64(limit)))
		}
	}
	slices.Sort(ls)
	ls = slices.Compact(ls)
	if len(ls) == 1 {
		ls = append([]int64{max(ls[0]/2, 1)}, ls...)
	}
	return ls
}

// SimCosts measures the plan costs of a kvtier sim of cfg the way kvtier
// probe does (a prompt's TTFT when its prefix is nowhere, in GPU memory,
// in CPU memory), at each of ls, by replaying the requests through the
// simulator's engine on its virtual clock (vllmsim.Replay): measured, in
// modeled time, not read off the cost model. Every row is labelled
// simulated and verified by the cached tokens the engine reports; step,
// when not nil, is told which length is under way.
func SimCosts(cfg vllmsim.Config, ls []int64, step func(i, n int)) (*analysis.PlanCosts, error) {
	var rows []results.Row
	for i, L := range ls {
		if step != nil {
			step(i, len(ls))
		}
		rs, err := simProbe(cfg, int(L), uint64(i))
		if err != nil {
			return nil, fmt.Errorf("kvtier sim at %d tokens: %w", L, err)
		}
		rows = append(rows, rs...)
	}
	for _, tier := range tierspec.ProbeNames() {
		if !slices.Contains([]string{simMiss, simGPU, simCPU}, tier) {
			r := simRow(cfg, tier, ls[len(ls)-1])
			r.Status, r.Reason = results.StatusSkipped, simRemoteReason
			rows = append(rows, r)
		}
	}
	return analysis.LoadPlanCosts(SimCostsLabel, nil, rows)
}

// simPool sizes the simulated engine of a probe at L tokens as kvtier
// probe --sim does: a GPU pool of twice the prompt (at least 1024
// blocks), a CPU store four times that, a context that takes the prompt.
func simPool(cfg vllmsim.Config, L int) vllmsim.Config {
	bs := cfg.BlockSize
	if bs == 0 {
		bs = vllmsim.DefaultBlockSize
	}
	cfg.BlockSize = bs
	cfg.GPUBlocks = max(2*L/bs+64, 1024)
	cfg.CPUBlocks = 4 * cfg.GPUBlocks
	cfg.MaxModelLen = max(cfg.MaxModelLen, vllmsim.DefaultMaxModelLen, L+1024)
	return cfg
}

// simProbe measures the miss, GPU hit and CPU hit of an L-token prompt
// in one replay: the prompt (a miss), the prompt again (its prefix in
// GPU memory), fillers of 1.5 GPU pools (as kvtier probe's eviction
// flood), the prompt once more (its prefix loaded from the CPU store).
// Each request is sent after the one before has its first token:
// nothing queues, as in a probe.
func simProbe(cfg vllmsim.Config, L int, seed uint64) ([]results.Row, error) {
	cfg = simPool(cfg, L)
	pool := cfg.GPUBlocks * cfg.BlockSize
	filler := min(8192, pool/2)
	// The gap between sends: far longer than any request takes (checked
	// below); idle modeled time costs nothing.
	gap := 4*(vllmsim.EstimateTTFT(cfg, simMiss, max(L, filler), 0)) + 1
	prompt := serving.TokenIDs(seed, 0, L)
	arr := []vllmsim.Arrival{{At: 0, Prompt: prompt, MaxTokens: 1}, {At: gap, Prompt: prompt, MaxTokens: 1}}
	for i := 0; i*filler < pool*3/2; i++ {
		arr = append(arr, vllmsim.Arrival{At: float64(len(arr)) * gap, Prompt: serving.TokenIDs(seed, uint64(i+1), filler), MaxTokens: 1})
	}
	arr = append(arr, vllmsim.Arrival{At: float64(len(arr)) * gap, Prompt: prompt, MaxTokens: 1})
	tr, err := vllmsim.Replay(cfg, arr, func(float64, func(int) bool) bool { return false })
	if err != nil {
		return nil, err
	}
	for i, t := range tr {
		if !t.Done || len(t.Tokens) == 0 || t.Tokens[0]-arr[i].At >= gap {
			return nil, fmt.Errorf("request %d of %d did not finish within its %.0f s slot", i+1, len(tr), gap)
		}
	}
	hit := (L - 1) / cfg.BlockSize * cfg.BlockSize
	return []results.Row{
		simMeasured(cfg, simMiss, L, arr[0].At, tr[0], tr[0].Cached == 0, "nothing cached"),
		simMeasured(cfg, simGPU, L, arr[1].At, tr[1], tr[1].Cached >= hit && tr[1].Loaded == 0, fmt.Sprintf("%d tokens from GPU memory", hit)),
		simMeasured(cfg, simCPU, L, arr[len(arr)-1].At, tr[len(tr)-1], tr[len(tr)-1].Loaded >= hit, fmt.Sprintf("%d tokens loaded from the CPU store", hit)),
	}, nil
}

// simRow is a probe row of the simulator of cfg.
func simRow(cfg vllmsim.Config, tier string, L int64) results.Row {
	r := results.NewRow(costsProbeSuite)
	r.Tier, r.PrefixTokens, r.Model = tier, L, cfg.Model
	r.Set(results.ColSimulated, true)
	return r
}

// simMeasured is the probe row of one replayed request sent at sent:
// its TTFT in modeled seconds, verified when ok (what it should have
// found cached, want, is the reason otherwise).
func simMeasured(cfg vllmsim.Config, tier string, L int, sent float64, t vllmsim.Trace, ok bool, want string) results.Row {
	r := simRow(cfg, tier, int64(L))
	r.Status = results.StatusOK
	ttft := t.Tokens[0] - sent
	r.SetTime(ttft)
	r.Set(results.ColTTFT, ttft)
	r.Set(results.ColVerified, ok)
	if !ok {
		r.Set(results.ColVerifyReason, fmt.Sprintf("want %s; the engine found %d cached, %d of them loaded", want, t.Cached, t.Loaded))
	}
	return r
}

// costsProbeSuite is the suite whose rows SimCosts writes: the probe's,
// whose TTFT per tier the plan fits.
const costsProbeSuite = "probe"
