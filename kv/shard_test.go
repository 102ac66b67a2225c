package kv

import (
	"maps"
	"strings"
	"testing"
)

// TestShard: per-GPU KV bytes are 1/TP of the KV heads' (whole heads
// only), fp8 halves every byte count, and MLA's latent is not split.
func TestShard(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		model    string
		tp       int
		dtype    string
		perBlock int64 // bytes of one 16-token block on one GPU
		chunk    int64 // layerwise chunk bytes
		err      string
	}{
		{"qwen3-coder-30b-a3b", 1, "", 1572864, 16384, ""},
		{"qwen3-coder-30b-a3b", 2, "", 786432, 8192, ""},
		{"qwen3-coder-30b-a3b", 4, "fp8", 196608, 2048, ""},
		{"qwen3-coder-30b-a3b", 1, "FP8", 786432, 8192, ""},
		{"llama-3.1-70b", 8, "bf16", 655360, 4096, ""},
		{"deepseek-v3", 8, "fp8", 562176, 9216, ""},
		// TP above the KV heads: one head per GPU, replicated (vLLM).
		{"qwen3-coder-30b-a3b", 8, "", 393216, 4096, ""},
		{"llama-3.1-405b", 16, "fp8_e4m3", 516096, 2048, ""},
		{"llama-3.1-405b", 8, "fp8_e5m2", 516096, 2048, ""},
		{"llama-3.1-8b", 1, "auto", 2097152, 32768, ""},
		{"qwen3-coder-30b-a3b", 6, "", 0, 0, "tp: qwen3-coder-30b-a3b has 4 KV heads: 6 GPUs can neither split them"},
		{"llama-3.1-8b", 3, "", 0, 0, "8 KV heads: 3 GPUs can neither"},
		{"llama-3.1-8b", 12, "", 0, 0, "8 KV heads: 12 GPUs can neither"},
		{"llama-3.1-8b", 0, "", 0, 0, "tp: want 1 to 4096"},
		{"llama-3.1-8b", 1, "int4", 0, 0, `kv-dtype: unknown KV dtype "int4" (known: auto, bf16, fp16, fp8, fp8_e4m3, fp8_e5m2)`},
	} {
		g, err := LookupModel(c.model)
		if err != nil {
			t.Fatal(err)
		}
		s, err := g.Shard(c.tp, c.dtype)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s tp %d %q: error %v, want %q", c.model, c.tp, c.dtype, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s tp %d %q: %v", c.model, c.tp, c.dtype, err)
		}
		if s.BlockBytes() != c.perBlock || s.ChunkBytes(Layerwise) != c.chunk {
			t.Errorf("%s tp %d %q: block %d, chunk %d; want %d, %d", c.model, c.tp, c.dtype, s.BlockBytes(), s.ChunkBytes(Layerwise), c.perBlock, c.chunk)
		}
	}
}

// TestShardSettings: a run's manifest records how the heads were
// sharded, replicas included.
func TestShardSettings(t *testing.T) {
	t.Parallel()
	g, err := LookupModel("llama-3.1-405b")
	if err != nil {
		t.Fatal(err)
	}
	s, err := g.Shard(16, "fp8_e4m3")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tp": "16", "kv_dtype": "fp8_e4m3", "kv_heads_per_gpu": "1", "kv_head_replicas": "2"}
	if got := s.ShardSettings(); !maps.Equal(got, want) {
		t.Errorf("ShardSettings = %v, want %v", got, want)
	}
}
