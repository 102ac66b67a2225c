// Package kv holds what a model's KV cache looks like, without any device
// or library behind it: the geometry of a model (presets and Hugging Face
// config.json, MLA included), the pool layouts a serving engine keeps KV
// in, the address arithmetic of pools and the gather plans between them,
// and the matrix multiplies a prefill of the model costs. It is cgo-free
// and imports nothing else from kvtier, so the simulator, the trace
// planner and the report can use it without linking a driver.
package kv

import "fmt"

// A Geometry is the shape of one model's KV cache and the sizes of the
// prefill compute that recomputing it costs. Counts are per model; the KV
// bytes are those one GPU holds: 1/TP of the KV heads (see Shard), in
// the KV cache's dtype.
type Geometry struct {
	Model       string // preset name or config.json path
	Layers      int    // num_hidden_layers
	Heads       int    // num_attention_heads
	KVHeads     int    // num_key_value_heads (Heads when absent)
	HeadDim     int    // head_dim (Hidden/Heads when absent)
	Hidden      int    // hidden_size
	Vocab       int    // vocab_size
	DType       string // "bfloat16", "float16", "float32", "float8_e4m3fn"
	DTypeBytes  int
	BlockTokens int // tokens per KV block (16 by default)

	// Dense MLP.
	Intermediate int // intermediate_size

	// Mixture of experts; Experts == 0 means a dense model.
	Experts            int // n_routed_experts / num_experts
	ExpertsPerToken    int // num_experts_per_tok
	MoEIntermediate    int // moe_intermediate_size
	SharedExperts      int // n_shared_experts
	SharedIntermediate int // shared_expert_intermediate_size (MoEIntermediate×SharedExperts when absent)
	DenseLayers        int // first_k_dense_replace: leading layers with a dense MLP

	// Multi-head latent attention (DeepSeek V2/V3); KVLoraRank == 0 means
	// ordinary K and V per KV head.
	KVLoraRank    int
	QLoraRank     int
	QKRopeHeadDim int
	QKNopeHeadDim int
	VHeadDim      int

	// Tensor parallelism and the KV cache's dtype (Shard): TP GPUs each
	// hold KVHeads/TP heads (0 or 1: one GPU holds them all); KV entries
	// are KVDTypeBytes wide (0: DTypeBytes, the model's dtype).
	TP           int
	KVDType      string // "bf16", "fp16", "fp8"; "" is the model's dtype
	KVDTypeBytes int
}

// MLA reports whether the model caches one latent vector per token and
// layer instead of separate K and V.
func (g Geometry) MLA() bool { return g.KVLoraRank > 0 }

// BytesPerTokenLayer is the KV bytes one token occupies in one layer on
// one GPU: K and V of its KVHeads/TP heads, or the MLA latent (which
// every rank of a tensor-parallel group holds whole).
func (g Geometry) BytesPerTokenLayer() int64 {
	if g.MLA() {
		return int64(g.KVLoraRank+g.QKRopeHeadDim) * int64(g.KVElemBytes())
	}
	return 2 * int64(g.KVHeadsPerGPU()) * int64(g.HeadDim) * int64(g.KVElemBytes())
}

// BytesPerToken is the KV bytes of one token across all layers.
func (g Geometry) BytesPerToken() int64 { return g.BytesPerTokenLayer() * int64(g.Layers) }

// BlockBytes is the KV bytes of one block of BlockTokens tokens.
func (g Geometry) BlockBytes() int64 { return g.BytesPerToken() * int64(g.BlockTokens) }

// Blocks returns the number of KV blocks that hold a prefix of tokens:
// ceil(tokens / BlockTokens).
func (g Geometry) Blocks(tokens int) int {
	return (tokens + g.BlockTokens - 1) / g.BlockTokens
}

// ChunksPerBlock is how many separately addressed chunks one block is in
// the given layout: 2×layers in vLLM's layer-wise paged layout (K and V of
// every layer in their own pools; one per layer for MLA), one in the
// block-wise layout.
func (g Geometry) ChunksPerBlock(l Layout) int {
	switch l {
	case Blockwise:
		return 1
	default:
		if g.MLA() {
			return g.Layers
		}
		return 2 * g.Layers
	}
}

// ChunkBytes is the size of one chunk in the given layout.
func (g Geometry) ChunkBytes(l Layout) int64 {
	return g.BlockBytes() / int64(g.ChunksPerBlock(l))
}

// Limits of a geometry kvtier accepts: well beyond any published model,
// small enough that no size computed from them overflows and no table
// built per layer or expert grows without bound.
const (
	MaxLayers     = 1024
	MaxHeads      = 4096 // attention heads, KV heads, experts
	MaxDim        = 1 << 18
	MaxBlockBytes = 1 << 32 // one KV block: 4 GiB
)

// Validate reports the first field that makes g unusable: a count that
// is not positive, or one beyond the limits above.
func (g Geometry) Validate() error {
	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"num_hidden_layers", g.Layers, MaxLayers},
		{"num_attention_heads", g.Heads, MaxHeads},
		{"hidden_size", g.Hidden, MaxDim},
		{"dtype bytes", g.DTypeBytes, 8},
		{"block size", g.BlockTokens, MaxBlockTokens},
	} {
		if f.v <= 0 || f.v > f.max {
			return fmt.Errorf("geometry %s: %s must be 1 to %d, got %d", g.Model, f.name, f.max, f.v)
		}
	}
	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"num_key_value_heads", g.KVHeads, MaxHeads}, {"head_dim", g.HeadDim, MaxDim},
		{"intermediate_size", g.Intermediate, MaxDim}, {"num_experts", g.Experts, MaxHeads},
		{"num_experts_per_tok", g.ExpertsPerToken, MaxHeads}, {"moe_intermediate_size", g.MoEIntermediate, MaxDim},
		{"kv_lora_rank", g.KVLoraRank, MaxDim}, {"q_lora_rank", g.QLoraRank, MaxDim},
		{"qk_rope_head_dim", g.QKRopeHeadDim, MaxDim}, {"v_head_dim", g.VHeadDim, MaxDim},
	} {
		if f.v < 0 || f.v > f.max {
			return fmt.Errorf("geometry %s: %s must be 0 to %d, got %d", g.Model, f.name, f.max, f.v)
		}
	}
	if !g.MLA() && (g.KVHeads <= 0 || g.HeadDim <= 0) {
		return fmt.Errorf("geometry %s: num_key_value_heads and head_dim must be positive", g.Model)
	}
	if b := g.BlockBytes(); b <= 0 || b > MaxBlockBytes {
		return fmt.Errorf("geometry %s: a block of %d tokens would be %d bytes (at most %d)", g.Model, g.BlockTokens, b, int64(MaxBlockBytes))
	}
	return nil
}

// A Layout is how a pool arranges the chunks of its blocks.
type Layout string

// Layouts.
const (
	// Layerwise is vLLM's paged layout: K and V of each layer in separate
	// pools, so a block is ChunksPerBlock chunks at scattered addresses.
	Layerwise Layout = "layerwise"
	// Blockwise stores each block as one contiguous chunk, as LMCache-style
	// offload does.
	Blockwise Layout = "blockwise"
)

// Layouts lists the known layouts in display order.
func Layouts() []Layout { return []Layout{Layerwise, Blockwise} }

// ParseLayout returns the layout named s.
func ParseLayout(s string) (Layout, error) {
	for _, l := range Layouts() {
		if string(l) == s {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown layout %q (known: layerwise, blockwise)", s)
}
