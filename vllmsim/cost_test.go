package vllmsim

import (
	"math"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/kv"
)

func h20Cost(t *testing.T) costModel {
	t.Helper()
	g, err := kv.LookupModel("qwen3-coder-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	return newCostModel(g, h20)
}

// within fails unless got is within tol (a fraction) of want.
func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*want {
		t.Errorf("%s: %.4g, reference %.4g (off %+.0f%%, limit %.0f%%)", what, got, want, 100*(got-want)/want, 100*tol)
	} else {
		t.Logf("%s: %.4g, reference %.4g (%+.0f%%)", what, got, want, 100*(got-want)/want)
	}
}

// The four-tier TTFT table of the H20 reference (docs/reference.md).
func TestCostFourTierTable(t *testing.T) {
	c := h20Cost(t)
	for _, r := range analysis.ReferenceTTFT {
		L := int(r.L)
		for _, tier := range []string{tierMiss, tierRemote, tierCPU, tierGPU} {
			got := c.estimateTTFT(tier, L, 16, 8192, 0)
			within(t, tier+" "+itoa(L/1024)+"k", got, r.Tier(tier), 0.25)
		}
	}
	// Low-load miss TTFT at short prompts, looser: the fit targets 8k-64k.
	for _, r := range []struct {
		k    int
		want float64
	}{{2, 0.134}, {4, 0.260}} {
		within(t, "miss "+itoa(r.k)+"k", c.estimateTTFT(tierMiss, r.k*1024, 16, 8192, 0), r.want, 0.25)
	}
}

// MB1: the base TPOT and the prefill TTFT of every cell of the
// reference's table.
func TestCostMB1(t *testing.T) {
	c := h20Cost(t)
	for _, r := range analysis.ReferenceMB1 {
		cell := "D=" + itoa(r.D) + " P=" + itoa(r.P)
		got := c.stepTime(stepShape{Decodes: r.D, DecodeContext: int64(r.D) * 512})
		within(t, "base TPOT "+cell, got, r.BaseTPOT, 0.25)
		within(t, "prefill TTFT "+cell, c.estimateTTFT(tierMiss, r.P, 16, 8192, r.D), r.PrefillTTFT, 0.25)
	}
}

func TestZeroProfileIsFree(t *testing.T) {
	g, _ := kv.LookupModel("qwen3-coder-30b-a3b")
	c := newCostModel(g, zero)
	for _, tier := range []string{tierMiss, tierGPU, tierCPU, tierRemote} {
		if got := c.estimateTTFT(tier, 65536, 16, 8192, 8); got != 0 {
			t.Errorf("zero profile %s TTFT %g, want 0", tier, got)
		}
	}
}

func TestActiveWeights(t *testing.T) {
	// Qwen3-30B-A3B is "3B active": its linear layers (no embeddings, no
	// LM head) are about 2.7B weights per token.
	g, _ := kv.LookupModel("qwen3-coder-30b-a3b")
	within(t, "qwen3-coder-30b-a3b active weights", activeWeights(g), 2.73e9, 0.02)
	// Llama-3.1-8B: 8.0B with 0.5B embeddings and 0.5B LM head left out.
	g, _ = kv.LookupModel("llama-3.1-8b")
	within(t, "llama-3.1-8b weights", activeWeights(g), 6.98e9, 0.02)
}

func itoa(n int) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{digits[n%10]}, b...)
	}
	return string(b)
}
