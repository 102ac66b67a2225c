package probe

import (
	"context"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
)

// planReps are the measured requests per tier and length of a plan's
// costs against a server (real time: noise is real).
const planReps = 3

// rowSink keeps the rows written to it.
type rowSink struct{ rows []results.Row }

func (s *rowSink) Write(r results.Row) error { s.rows = append(s.rows, r); return nil }
func (s *rowSink) Close() error              { return nil }

// planCosts is the probe's harness.CostProbe: the miss, GPU hit and CPU
// hit at the lengths req asks for given the server's context, each
// verified as kvtier probe verifies it.
func planCosts(ctx context.Context, req harness.CostProbeRequest) (harness.CostProbeResult, error) {
	cfg := Config{Endpoint: req.URL, Tiers: []string{tierMiss, tierGPU, tierCPU}, Reps: planReps, Seed: 1,
		EvictMargin: 1.5, Timeout: 120 * time.Second, BlockBytes: kv.ServedBlockBytes, HTTP: req.HTTP,
		Prefixes: req.Lengths(0)}
	p, err := New(ctx, cfg)
	if err != nil {
		return harness.CostProbeResult{}, err
	}
	if n := p.Info().MaxModelLen; n > 0 {
		// The server's context caps the lengths: a prober for them.
		cfg.Prefixes = req.Lengths(n - MaxTokens)
		if p, err = New(ctx, cfg); err != nil {
			return harness.CostProbeResult{}, err
		}
	}
	var sink rowSink
	if err := p.Run(ctx, &sink); err != nil {
		return harness.CostProbeResult{}, err
	}
	info := p.Info()
	res := harness.CostProbeResult{Rows: sink.rows, Lengths: cfg.Prefixes,
		GPUTokens: int64(info.GPUBlocks) * int64(info.BlockSize), CPUTokens: int64(info.Offload.Tokens)}
	return res, nil
}
