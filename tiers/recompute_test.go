package tiers

import (
	"context"
	"testing"

	"github.com/kvtier/kvtier/kv"
)

func TestRecomputeTier(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	g := tinyGeometry()
	tier := newTier(t, "recompute", Env{Backend: b, Geometry: g})
	if err := tier.Setup(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	p := Prefix{Tokens: 32, Blocks: 2}
	if err := tier.Fetch(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if tier.Verify(p) != nil || tier.Work(p) != kv.PrefillFLOPs(g, 32) {
		t.Errorf("Work = %v", tier.Work(p))
	}
	if a := tier.Attrs(); a["compute_dtype"] != "fp32" {
		t.Errorf("Attrs = %v", a)
	}
	spec, _ := Lookup("recompute")
	if spec.Moves() {
		t.Error("recompute registered as moving bytes")
	}
}
