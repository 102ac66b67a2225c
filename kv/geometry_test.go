package kv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPresets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model                string
		perTokenLayer        int64
		perToken, perBlock   int64
		layerwiseChunks      int
		layerwiseChunkBytes  int64
		blockwiseChunkBytes  int64
		experts, topK, dense int
	}{
		// 2·4·128·2 = 2048 B per layer; ×48 = 98,304; ×16 = 1,572,864; 96 chunks.
		{"qwen3-coder-30b-a3b", 2048, 98304, 1572864, 96, 16384, 1572864, 128, 8, 0},
		// 2·8·128·2 = 4096 per layer; ×32 = 131,072.
		{"llama-3.1-8b", 4096, 131072, 2097152, 64, 32768, 2097152, 0, 0, 0},
		// 4096 ×80 = 327,680.
		{"llama-3.1-70b", 4096, 327680, 5242880, 160, 32768, 5242880, 0, 0, 0},
		// 4096 ×64 = 262,144.
		{"qwen3-32b", 4096, 262144, 4194304, 128, 32768, 4194304, 0, 0, 0},
		// MLA: (512+64)·2 = 1152 per layer; ×61 = 70,272; one chunk per layer.
		{"deepseek-v3", 1152, 70272, 1124352, 61, 18432, 1124352, 256, 8, 3},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			g, err := LookupModel(tt.model)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := g.BytesPerTokenLayer(); got != tt.perTokenLayer {
				t.Errorf("BytesPerTokenLayer = %d, want %d", got, tt.perTokenLayer)
			}
			if got := g.BytesPerToken(); got != tt.perToken {
				t.Errorf("BytesPerToken = %d, want %d", got, tt.perToken)
			}
			if got := g.BlockBytes(); got != tt.perBlock {
				t.Errorf("BlockBytes = %d, want %d", got, tt.perBlock)
			}
			if got := g.ChunksPerBlock(Layerwise); got != tt.layerwiseChunks {
				t.Errorf("layerwise chunks = %d, want %d", got, tt.layerwiseChunks)
			}
			if got := g.ChunkBytes(Layerwise); got != tt.layerwiseChunkBytes {
				t.Errorf("layerwise chunk = %d, want %d", got, tt.layerwiseChunkBytes)
			}
			if got := g.ChunkBytes(Blockwise); got != tt.blockwiseChunkBytes {
				t.Errorf("blockwise chunk = %d, want %d", got, tt.blockwiseChunkBytes)
			}
			if g.Experts != tt.experts || g.ExpertsPerToken != tt.topK || g.DenseLayers != tt.dense {
				t.Errorf("MoE = %d experts top-%d, %d dense; want %d top-%d, %d", g.Experts, g.ExpertsPerToken, g.DenseLayers, tt.experts, tt.topK, tt.dense)
			}
		})
	}
}

func TestPresetDetails(t *testing.T) {
	t.Parallel()
	g, _ := LookupModel("Qwen3-Coder-30B-A3B")
	if g.Hidden != 2048 || g.MoEIntermediate != 768 || g.Heads != 32 || g.BlockTokens != 16 {
		t.Errorf("qwen3-coder preset = %+v", g)
	}
	if g.Blocks(1000) != 63 || g.Blocks(1024) != 64 || g.Blocks(1) != 1 {
		t.Errorf("Blocks: got %d %d %d", g.Blocks(1000), g.Blocks(1024), g.Blocks(1))
	}
	d, _ := LookupModel("deepseek-v3")
	if !d.MLA() || d.SharedExperts != 1 || d.MoEIntermediate != 2048 || d.Layers != 61 {
		t.Errorf("deepseek preset = %+v", d)
	}
}

func TestLookupModelUnknown(t *testing.T) {
	t.Parallel()
	_, err := LookupModel("gpt-5")
	if err == nil {
		t.Fatal("no error for an unknown model")
	}
	for _, name := range ModelNames() {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list preset %s", err, name)
		}
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		// expectations
		perToken     int64
		kvHeads      int
		headDim      int
		dtypeBytes   int
		experts      int
		topK         int
		shared       int
		sharedInter  int
		dense        int
		mla          bool
		intermediate int
	}{
		{
			name: "kv heads and head_dim absent",
			// heads=8, hidden=512 → head_dim 64, kv heads 8: 2·8·64·2 = 2048/layer ×4 = 8192.
			body:     `{"num_hidden_layers":4,"num_attention_heads":8,"hidden_size":512,"intermediate_size":1024,"torch_dtype":"bfloat16"}`,
			perToken: 8192, kvHeads: 8, headDim: 64, dtypeBytes: 2, intermediate: 1024,
		},
		{
			name: "float32 via dtype, GQA",
			// 2·2·64·4 = 1024/layer ×3 = 3072.
			body:     `{"num_hidden_layers":3,"num_attention_heads":8,"num_key_value_heads":2,"hidden_size":512,"dtype":"float32"}`,
			perToken: 3072, kvHeads: 2, headDim: 64, dtypeBytes: 4,
		},
		{
			name:     "dtype absent defaults to bf16",
			body:     `{"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":1,"head_dim":32,"hidden_size":64}`,
			perToken: 2 * 2 * 1 * 32 * 2, kvHeads: 1, headDim: 32, dtypeBytes: 2,
		},
		{
			name: "qwen3 moe style",
			body: `{"architectures":["Qwen3MoeForCausalLM"],"num_hidden_layers":48,"num_attention_heads":32,"num_key_value_heads":4,"head_dim":128,
				"hidden_size":2048,"intermediate_size":6144,"moe_intermediate_size":768,"num_experts":128,"num_experts_per_tok":8,
				"decoder_sparse_step":1,"torch_dtype":"bfloat16","vocab_size":151936}`,
			perToken: 98304, kvHeads: 4, headDim: 128, dtypeBytes: 2, experts: 128, topK: 8, intermediate: 6144,
		},
		{
			name: "qwen2 moe shared expert, sparse step 2",
			body: `{"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,"hidden_size":256,"moe_intermediate_size":64,
				"shared_expert_intermediate_size":256,"num_experts":8,"num_experts_per_tok":2,"decoder_sparse_step":2,"torch_dtype":"float16"}`,
			perToken: 2 * 2 * 64 * 2 * 4, kvHeads: 2, headDim: 64, dtypeBytes: 2, experts: 8, topK: 2, shared: 1, sharedInter: 256, dense: 2,
		},
		{
			name: "deepseek mla",
			body: `{"num_hidden_layers":61,"num_attention_heads":128,"num_key_value_heads":128,"hidden_size":7168,"kv_lora_rank":512,"q_lora_rank":1536,
				"qk_rope_head_dim":64,"qk_nope_head_dim":128,"v_head_dim":128,"n_routed_experts":256,"n_shared_experts":1,"num_experts_per_tok":8,
				"moe_intermediate_size":2048,"first_k_dense_replace":3,"intermediate_size":18432,"torch_dtype":"bfloat16"}`,
			perToken: 70272, kvHeads: 128, headDim: 192, dtypeBytes: 2, experts: 256, topK: 8, shared: 1, sharedInter: 2048, dense: 3, mla: true, intermediate: 18432,
		},
		{
			name:     "nested text_config",
			body:     `{"architectures":["Foo"],"torch_dtype":"float16","text_config":{"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"hidden_size":128}}`,
			perToken: 2 * 2 * 32 * 2 * 2, kvHeads: 2, headDim: 32, dtypeBytes: 2,
		},
		{
			name:     "fp8 and null fields",
			body:     `{"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":null,"hidden_size":16,"torch_dtype":"float8_e4m3fn"}`,
			perToken: 2 * 2 * 8 * 1, kvHeads: 2, headDim: 8, dtypeBytes: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ParseConfig(writeConfig(t, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := g.BytesPerToken(); got != tt.perToken {
				t.Errorf("BytesPerToken = %d, want %d", got, tt.perToken)
			}
			if g.BlockBytes() != tt.perToken*16 {
				t.Errorf("BlockBytes = %d, want %d", g.BlockBytes(), tt.perToken*16)
			}
			if g.KVHeads != tt.kvHeads || g.HeadDim != tt.headDim || g.DTypeBytes != tt.dtypeBytes {
				t.Errorf("kv heads %d head_dim %d dtype bytes %d; want %d %d %d", g.KVHeads, g.HeadDim, g.DTypeBytes, tt.kvHeads, tt.headDim, tt.dtypeBytes)
			}
			if g.Experts != tt.experts || g.ExpertsPerToken != tt.topK || g.SharedExperts != tt.shared || g.SharedIntermediate != tt.sharedInter || g.DenseLayers != tt.dense {
				t.Errorf("MoE = %+v", g)
			}
			if g.MLA() != tt.mla {
				t.Errorf("MLA = %v, want %v", g.MLA(), tt.mla)
			}
			if g.Intermediate != tt.intermediate {
				t.Errorf("Intermediate = %d, want %d", g.Intermediate, tt.intermediate)
			}
		})
	}
}

func TestParseConfigDirectory(t *testing.T) {
	t.Parallel()
	p := writeConfig(t, `{"num_hidden_layers":2,"num_attention_heads":4,"hidden_size":64}`)
	g, err := ParseConfig(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	if g.Layers != 2 {
		t.Errorf("Layers = %d", g.Layers)
	}
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       []string // substrings of the error
	}{
		{"malformed", `{"num_hidden_layers": 4,`, []string{"malformed JSON"}},
		{"not an object", `[1,2]`, []string{"malformed JSON"}},
		{"unknown dtype", `{"num_hidden_layers":2,"num_attention_heads":4,"hidden_size":64,"torch_dtype":"int4"}`, []string{"torch_dtype", "int4"}},
		{"unknown dtype via dtype", `{"num_hidden_layers":2,"num_attention_heads":4,"hidden_size":64,"dtype":"complex64"}`, []string{"field dtype", "complex64"}},
		{"string layers", `{"num_hidden_layers":"2","num_attention_heads":4,"hidden_size":64}`, []string{"num_hidden_layers", "number"}},
		{"fractional heads", `{"num_hidden_layers":2,"num_attention_heads":4.5,"hidden_size":64}`, []string{"num_attention_heads"}},
		{"missing layers", `{"num_attention_heads":4,"hidden_size":64}`, []string{"num_hidden_layers", "missing"}},
		{"moe without top-k", `{"num_hidden_layers":2,"num_attention_heads":4,"hidden_size":64,"num_experts":8}`, []string{"num_experts_per_tok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeConfig(t, tt.body)
			_, err := ParseConfig(p)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tt.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := ParseConfig(filepath.Join(t.TempDir(), "nope.json")); err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Errorf("unreadable file: err = %v", err)
	}
}

// A tiny model: 2 layers, 2 KV heads of dim 8, bf16 → 2·2·8·2 = 64 B per
// token and layer, 128 B per token, 2048 B per 16-token block, 4 chunks of
// 512 B layer-wise.
func tinyGeometry() Geometry {
	return Geometry{Model: "tiny", Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, Hidden: 32, DType: "bfloat16",
		DTypeBytes: 2, BlockTokens: 16, Intermediate: 64}
}
