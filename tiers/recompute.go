package tiers

import (
	"context"
	"fmt"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

func init() {
	Register(Spec{
		Desc:   tierspec.Recompute,
		Timing: Queued,
		New:    func(env Env) Tier { return &recomputeTier{env: env} },
	})
}

// recomputeTier runs the prefill GEMMs of the prefix on the backend.
type recomputeTier struct {
	env  Env
	ops  map[int][]kv.GEMM // by prefix tokens
	flop map[int]float64
}

func (t *recomputeTier) Available() string { return "" }

// SetupBytes is 0: the GEMM scratch is the backend's.
func (t *recomputeTier) SetupBytes(maxBlocks int) int64 { return 0 }

func (t *recomputeTier) Setup(ctx context.Context, maxBlocks int) error {
	t.ops, t.flop = map[int][]kv.GEMM{}, map[int]float64{}
	return nil
}

func (t *recomputeTier) opsFor(p Prefix) []kv.GEMM {
	if t.ops == nil {
		t.ops, t.flop = map[int][]kv.GEMM{}, map[int]float64{}
	}
	ops, ok := t.ops[p.Tokens]
	if !ok {
		ops = kv.PrefillGEMMs(t.env.Geometry, p.Tokens)
		t.ops[p.Tokens] = ops
	}
	return ops
}

// Fetch issues the prefill GEMMs of p.Tokens tokens.
func (t *recomputeTier) Fetch(ctx context.Context, p Prefix) error {
	ops := t.opsFor(p)
	if len(ops) == 0 {
		return fmt.Errorf("recompute: no work for a prefix of %d tokens", p.Tokens)
	}
	// Issue in groups so a cancelled context (Ctrl-C) stops a long CPU
	// prefill between groups rather than minutes later.
	const group = 64
	for i := 0; i < len(ops); i += group {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := t.env.Backend.GEMMs(ops[i:min(i+group, len(ops))]); err != nil {
			return err
		}
	}
	return nil
}

// Verify returns nil: recomputation moves no KV data.
func (t *recomputeTier) Verify(p Prefix) error { return nil }

func (t *recomputeTier) Attrs() map[string]string {
	return map[string]string{
		"transport":     "compute",
		"device":        t.env.Backend.Device(),
		"compute_dtype": t.env.Backend.ComputeDType(),
	}
}

// Work is the FLOPs of the prefill of p.Tokens tokens.
func (t *recomputeTier) Work(p Prefix) float64 {
	if f, ok := t.flop[p.Tokens]; ok {
		return f
	}
	var f float64
	for _, op := range t.opsFor(p) {
		f += op.FLOPs()
	}
	t.flop[p.Tokens] = f
	return f
}

func (t *recomputeTier) Close() error { return nil }
