package vllmsim

import (
	"math"
	"testing"

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

// The four-tier TTFT table of shared/reference/h20-reference.md.
func TestCostFourTierTable(t *testing.T) {
	c := h20Cost(t)
	ref := []struct {
		k                      int
		miss, remote, cpu, gpu float64
	}{
		{8, 0.588, 0.151, 0.076, 0.053},
		{16, 1.547, 0.262, 0.105, 0.063},
		{32, 4.604, 0.680, 0.158, 0.080},
		{64, 15.23, 0.97, 0.27, 0.11},
	}
	for _, r := range ref {
		L := r.k * 1024
		for _, tc := range []struct {
			tier string
			want float64
		}{{tierMiss, r.miss}, {tierRemote, r.remote}, {tierCPU, r.cpu}, {tierGPU, r.gpu}} {
			got := c.estimateTTFT(tc.tier, L, 16, 8192, 0)
			within(t, tc.tier+" "+itoa(r.k)+"k", got, tc.want, 0.25)
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

// MB1: base TPOT at D=1 and D=8 and the prefill TTFT of P=32k beside 8
// decodes.
func TestCostMB1(t *testing.T) {
	c := h20Cost(t)
	for _, r := range []struct {
		d    int
		want float64
	}{{1, 4.79e-3}, {8, 7.70e-3}} {
		got := c.stepTime(stepShape{Decodes: r.d, DecodeContext: int64(r.d) * 512})
		within(t, "base TPOT D="+itoa(r.d), got, r.want, 0.25)
	}
	for _, r := range []struct {
		d, p int
		want float64
	}{{1, 2048, 0.163}, {1, 32768, 4.515}, {8, 8192, 0.583}, {8, 32768, 4.520}, {8, 65536, 15.615}, {8, 131072, 56.991}} {
		got := c.estimateTTFT(tierMiss, r.p, 16, 8192, r.d)
		within(t, "prefill TTFT D="+itoa(r.d)+" P="+itoa(r.p), got, r.want, 0.25)
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
