package kv

// A GEMM is C[M×N] = A[M×K]·B[K×N], Batch times (a strided batch), in the
// backend's compute dtype.
type GEMM struct {
	Name    string // "qkv_proj", "attn_scores", "moe_up", ...
	M, N, K int
	Batch   int
}

// FLOPs is the multiply-add count of g times two.
func (g GEMM) FLOPs() float64 {
	b := max(g.Batch, 1)
	return 2 * float64(g.M) * float64(g.N) * float64(g.K) * float64(b)
}

// attnOperandLimit bounds the bytes of one attention-score operand
// (query tile × keys × heads in bf16), which sets the query tile size.
const attnOperandLimit = 512 << 20

// AttnTile returns the query rows per attention tile for a prefill of
// tokens: the largest power of two up to 2048 (at least 128) whose score
// matrix over all heads at full length stays within ~512 MiB in bf16.
func AttnTile(g Geometry, tokens int) int {
	t := 2048
	for t > 128 && int64(t)*int64(tokens)*int64(g.Heads)*2 > attnOperandLimit {
		t /= 2
	}
	return t
}

// PrefillGEMMs lists the matrix multiplies of a prefill of tokens tokens
// through every layer of g, the work recomputing a prefix costs:
//
//   - attention projections: fused q/k/v and o, or for MLA the low-rank
//     q_a/q_b, kv_a (latent plus rope key) and kv_b (latent expanded to
//     per-head K and V) and o;
//   - attention, causal, tiled in query blocks of AttnTile rows: tile i
//     multiplies its queries by the (i+1)·tile keys it sees (QKᵀ) and the
//     scores by as many values (PV), each a strided batch over heads;
//   - the MLP: gate/up and down for dense layers; for MoE layers the router,
//     top_k expert GEMMs of M = tokens each (tokens×top_k rows spread over
//     the experts cost the same FLOPs) and the shared experts.
//
// The logits of the last token are left out. Every backend runs this
// same list.
func PrefillGEMMs(g Geometry, tokens int) []GEMM {
	if tokens <= 0 {
		return nil
	}
	var ops []GEMM
	add := func(name string, m, n, k, batch int) {
		if m > 0 && n > 0 && k > 0 {
			ops = append(ops, GEMM{Name: name, M: m, N: n, K: k, Batch: batch})
		}
	}
	qkDim, vDim := g.HeadDim, g.HeadDim
	if g.MLA() {
		qkDim = g.QKNopeHeadDim + g.QKRopeHeadDim
		vDim = g.VHeadDim
	}
	tile := AttnTile(g, tokens)
	for layer := 0; layer < g.Layers; layer++ {
		// Attention projections.
		if g.MLA() {
			if g.QLoraRank > 0 {
				add("q_a_proj", tokens, g.QLoraRank, g.Hidden, 1)
				add("q_b_proj", tokens, g.Heads*qkDim, g.QLoraRank, 1)
			} else {
				add("q_proj", tokens, g.Heads*qkDim, g.Hidden, 1)
			}
			add("kv_a_proj", tokens, g.KVLoraRank+g.QKRopeHeadDim, g.Hidden, 1)
			add("kv_b_proj", tokens, g.Heads*(g.QKNopeHeadDim+vDim), g.KVLoraRank, 1)
		} else {
			add("qkv_proj", tokens, (g.Heads+2*g.KVHeads)*g.HeadDim, g.Hidden, 1)
		}
		// Causal attention in query tiles.
		for start := 0; start < tokens; start += tile {
			rows := min(tile, tokens-start)
			keys := start + rows
			add("attn_scores", rows, keys, qkDim, g.Heads)
			add("attn_pv", rows, vDim, keys, g.Heads)
		}
		add("o_proj", tokens, g.Hidden, g.Heads*vDim, 1)
		// MLP.
		if g.Experts == 0 || layer < g.DenseLayers {
			add("mlp_gate_up", tokens, 2*g.Intermediate, g.Hidden, 1)
			add("mlp_down", tokens, g.Hidden, g.Intermediate, 1)
			continue
		}
		add("moe_router", tokens, g.Experts, g.Hidden, 1)
		add("moe_gate_up", tokens, 2*g.MoEIntermediate, g.Hidden, g.ExpertsPerToken)
		add("moe_down", tokens, g.Hidden, g.MoEIntermediate, g.ExpertsPerToken)
		if g.SharedExperts > 0 {
			si := g.SharedIntermediate
			if si == 0 {
				si = g.MoEIntermediate * g.SharedExperts
			}
			add("shared_gate_up", tokens, 2*si, g.Hidden, 1)
			add("shared_down", tokens, g.Hidden, si, 1)
		}
	}
	return ops
}

// PrefillFLOPs is the FLOPs of PrefillGEMMs(g, tokens).
func PrefillFLOPs(g Geometry, tokens int) float64 {
	var f float64
	for _, op := range PrefillGEMMs(g, tokens) {
		f += op.FLOPs()
	}
	return f
}
