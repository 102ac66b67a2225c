package replayer

import (
	"fmt"
	"math"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/units"
)

// A collector gathers what a run's rows say as they are written.
type collector struct {
	ttft, tpot, e2e []float64
	outcomes        map[string]int
	met             int
	outputTokens    float64
	// Over the ok requests: prompt and cached tokens (where the server
	// sent cached_tokens), input and predicted hit tokens (where known).
	prompt, cached     float64
	cachedRows, okRows int
	impossible         int // rows with a server_check
	input, predicted   float64
	predictedRows      int
}

func (c *collector) add(r results.Row) {
	if c.outcomes == nil {
		c.outcomes = map[string]int{}
	}
	c.outcomes[r.Get("outcome")]++
	if r.Get("slo_met") == "true" {
		c.met++
	}
	if r.Get(results.ColServerCheck) != "" {
		c.impossible++
	}
	if r.Status != results.StatusOK {
		return
	}
	c.okRows++
	c.ttft = append(c.ttft, r.Float(results.ColTTFT))
	c.tpot = append(c.tpot, r.Float("tpot_s"))
	c.e2e = append(c.e2e, r.Float("e2e_s"))
	c.outputTokens += nz(r.Float(results.ColOutputTokens))
	prompt := r.Float("prompt_tokens")
	if math.IsNaN(prompt) {
		prompt = r.Float(results.ColInputTokens)
	}
	if v := r.Float("cached_tokens"); !math.IsNaN(v) {
		c.cached += v
		c.prompt += prompt
		c.cachedRows++
	}
	if v := r.Float("predicted_hit_tokens"); !math.IsNaN(v) {
		c.predicted += v
		c.input += r.Float(results.ColInputTokens)
		c.predictedRows++
	}
}

func nz(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// A Summary is what one run realized.
type Summary struct {
	Requests, OK, Failed, TimedOut, Skipped int
	Duration                                time.Duration
	TTFT, TPOT, E2E                         results.Stats
	OutputTokens                            float64
	SLOMet                                  int // requests meeting both SLOs
	// APC is the realized prefix-cache hit ratio from the server's
	// counters (hits / queries over the run), ExtAPC the external one
	// (a KV connector's); NaN where the server lacks the counters, with
	// APCSource saying why.
	APC, ExtAPC                        float64
	Hits, Queries, ExtHits, ExtQueries float64
	APCSource                          string
	// SimLag is the most a kvtier sim fell behind real time during the
	// run (serving.SimLagBetween the scrapes before and after it; over
	// its life where the one before failed); NaN for other servers.
	SimLag       float64
	CachedShare  float64 // usage's cached tokens / prompt tokens; NaN when never sent
	Impossible   int     // requests whose server figures cannot be true
	PredictedAPC float64 // the LRU model's, NaN when the capacity is unknown
	Info         Info
	Trace        string // the workload's name
	// Planned is the workload's requests when the run was interrupted
	// before it sent them all (Interrupted); 0 for a whole run.
	Planned    int
	cfg        Config
	workingSet int64
}

// Interrupted marks the summary as of a run stopped before its planned
// requests: its row says how many of them it covers.
func (s *Summary) Interrupted(planned int) {
	s.Planned = planned
	if s.APCSource == "" {
		s.APCSource = "not read: the run was interrupted"
	}
}

// summarize turns the collected rows into the run's summary (without the
// counters: setAPC adds them).
func (rp *Replayer) summarize(c *collector, d time.Duration) *Summary {
	nan := math.NaN()
	s := &Summary{
		OK: c.outcomes[OutcomeOK], Failed: c.outcomes[OutcomeFailed], TimedOut: c.outcomes[OutcomeTimeout],
		Skipped: c.outcomes[OutcomeSkipped], Duration: d, OutputTokens: c.outputTokens, SLOMet: c.met,
		TTFT: results.Describe(c.ttft), TPOT: results.Describe(c.tpot), E2E: results.Describe(c.e2e),
		APC: nan, ExtAPC: nan, Hits: nan, Queries: nan, ExtHits: nan, ExtQueries: nan,
		CachedShare: nan, PredictedAPC: nan, SimLag: nan, Info: rp.info, Trace: rp.w.Name, cfg: rp.cfg,
	}
	s.Requests = s.OK + s.Failed + s.TimedOut + s.Skipped
	s.Impossible = c.impossible
	if c.cachedRows > 0 && c.prompt > 0 {
		s.CachedShare = c.cached / c.prompt
	}
	if c.predictedRows > 0 && c.input > 0 {
		s.PredictedAPC = c.predicted / c.input
	}
	return s
}

// setAPC computes the realized APC from the counters read before and
// after the run.
func (s *Summary) setAPC(before serving.Snapshot, berr error, after serving.Snapshot, aerr error) {
	if aerr == nil && after.SimLag.Found {
		s.SimLag = after.SimLag.Value
		if berr == nil {
			s.SimLag = serving.SimLagBetween(before, after)
		}
	}
	switch {
	case s.Info.Family.Traits().Metrics == "":
		s.APCSource = s.Info.Family.NoCounters(nil) // not its 404
		return
	case berr != nil:
		s.APCSource = "no /metrics before the run: " + berr.Error()
		return
	case aerr != nil:
		s.APCSource = "no /metrics after the run: " + aerr.Error()
		return
	}
	d := serving.Sub(before, after)
	if !d.HitsFound {
		s.APCSource = s.Info.Family.NoCounters(nil)
		return
	}
	s.APCSource = "/metrics: " + after.Hits.Name + " / " + after.Queries.Name
	s.Hits, s.Queries = d.Hits, d.Queries
	if d.Queries > 0 {
		s.APC = d.Hits / d.Queries
	}
	if d.ExtFound {
		s.ExtHits, s.ExtQueries = d.ExtHits, d.ExtQueries
		if d.ExtQueries > 0 {
			s.ExtAPC = d.ExtHits / d.ExtQueries
		}
	}
}

// Goodput is vllm bench's goodput: requests that met every SLO per
// second of the run; NaN without SLOs.
func (s *Summary) Goodput() float64 {
	if s.cfg.SLOTTFT <= 0 && s.cfg.SLOTPOT <= 0 {
		return math.NaN()
	}
	return float64(s.SLOMet) / s.Duration.Seconds()
}

// SetWorkingSet records the workload's working set in tokens for the
// run row (0: unknown).
func (s *Summary) SetWorkingSet(tokens int64) { s.workingSet = tokens }

// logRow says on the log what one request got.
func (rp *Replayer) logRow(r results.Row) {
	if rp.cfg.Log == nil {
		return
	}
	what := r.Get("outcome") + ": " + r.Reason
	if r.Status == results.StatusOK {
		what = fmt.Sprintf("ttft %s, e2e %s, %s prompt tokens, cached %s, predicted %s",
			units.FormatSeconds(r.Seconds), units.FormatSeconds(r.Float("e2e_s")), r.Get("prompt_tokens"), orDash(r.Get("cached_tokens")), orDash(r.Get("predicted_hit_tokens")))
	}
	harness.Note(rp.cfg.Log, fmt.Sprintf("replay %s session %s turn %s: %s", r.Get("request_index"), r.Get("session"), r.Get("turn"), what))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Row returns the run's row (RunColumns): one per run of replay_run.csv,
// one per capacity of knee.csv.
func (s *Summary) Row(suite string) results.Row {
	r := results.NewRow(suite)
	r.Backend, r.Transport, r.Model, r.Status = Backend, Transport, s.Info.Model, results.StatusOK
	if s.Failed+s.TimedOut > 0 {
		r.Status, r.Reason = results.StatusError, fmt.Sprintf("%s failed, %d timed out (see the request rows)", units.Count(s.Failed, "request", "requests"), s.TimedOut)
	}
	for _, c := range []struct {
		col string
		v   any
	}{
		{"endpoint", s.Info.Endpoint}, {"simulated", s.Info.Simulated}, {"trace", s.Trace},
		{"dispatch", string(s.cfg.Dispatch)}, {"speedup", s.cfg.Speedup}, {"concurrency", s.cfg.Concurrency},
		{"requests", s.Requests}, {"ok", s.OK}, {"failed", s.Failed}, {"timed_out", s.TimedOut}, {"skipped", s.Skipped},
		{"duration_s", s.Duration.Seconds()}, {"apc", s.APC}, {"hit_tokens", s.Hits}, {"query_tokens", s.Queries},
		{"apc_external", s.ExtAPC}, {"external_hit_tokens", s.ExtHits}, {"external_query_tokens", s.ExtQueries},
		{"apc_source", s.APCSource}, {"cached_share", s.CachedShare}, {results.ColServerImpossible, s.Impossible}, {"predicted_apc", s.PredictedAPC},
		{"block_size", s.Info.BlockSize}, {"server_family", s.Info.Family.Name},
		{"ttft_p50_s", s.TTFT.P50}, {"ttft_p90_s", s.TTFT.P90}, {"ttft_p99_s", s.TTFT.P99},
		{"tpot_p50_s", s.TPOT.P50}, {"tpot_p90_s", s.TPOT.P90}, {"e2e_p50_s", s.E2E.P50},
		{"goodput_rps", s.Goodput()}, {"throughput_rps", float64(s.OK) / s.Duration.Seconds()},
		{"output_tokens_per_s", s.OutputTokens / s.Duration.Seconds()}, {"sim_lag_s", s.SimLag},
	} {
		r.Set(c.col, c.v)
	}
	s.capacityColumns(&r)
	if s.Planned > 0 {
		r.Set(results.ColNote, fmt.Sprintf("interrupted after %d of %s: the figures are of those", s.Requests, units.Count(s.Planned, "request", "requests")))
	}
	return r
}

// capacityColumns sets the capacity, working-set and SLO columns, each
// only where it is known.
func (s *Summary) capacityColumns(r *results.Row) {
	bpt := s.Info.BytesPerToken
	if s.Info.GPUBlocks > 0 {
		r.Set(results.ColGPUBlocks, s.Info.GPUBlocks)
		r.Set(results.ColCapacityTokens, s.Info.CapacityTokens())
		if bpt > 0 {
			r.Set(results.ColCapacityBytes, s.Info.CapacityTokens()*bpt)
		}
	}
	if s.workingSet > 0 {
		r.Set(results.ColWorkingSetTokens, s.workingSet)
		if bpt > 0 {
			r.Set(results.ColWorkingSetBytes, s.workingSet*bpt)
		}
	}
	if s.cfg.SLOTTFT > 0 {
		r.Set("slo_ttft_s", s.cfg.SLOTTFT.Seconds())
	}
	if s.cfg.SLOTPOT > 0 {
		r.Set("slo_tpot_s", s.cfg.SLOTPOT.Seconds())
	}
	if s.cfg.SLOTTFT > 0 || s.cfg.SLOTPOT > 0 {
		r.Set("slo_met", s.SLOMet)
	}
}
