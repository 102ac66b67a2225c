package kv

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/option"
)

// DefaultBlockTokens is the KV block size vLLM uses by default.
const DefaultBlockTokens = 16

// presets holds the geometry of well-known models, taken from the
// config.json each publishes on Hugging Face. BlockTokens is filled in by
// LookupModel.
var presets = map[string]Geometry{
	// Qwen/Qwen3-Coder-30B-A3B-Instruct: 48 layers, GQA 32/4, MoE 128 top-8.
	"qwen3-coder-30b-a3b": {
		Layers: 48, Heads: 32, KVHeads: 4, HeadDim: 128, Hidden: 2048, Vocab: 151936,
		DType: "bfloat16", DTypeBytes: 2, Intermediate: 6144,
		Experts: 128, ExpertsPerToken: 8, MoEIntermediate: 768,
	},
	// meta-llama/Llama-3.1-8B-Instruct.
	"llama-3.1-8b": {
		Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, Hidden: 4096, Vocab: 128256,
		DType: "bfloat16", DTypeBytes: 2, Intermediate: 14336,
	},
	// meta-llama/Llama-3.1-70B-Instruct.
	"llama-3.1-70b": {
		Layers: 80, Heads: 64, KVHeads: 8, HeadDim: 128, Hidden: 8192, Vocab: 128256,
		DType: "bfloat16", DTypeBytes: 2, Intermediate: 28672,
	},
	// meta-llama/Llama-3.1-405B-Instruct: 8 KV heads, so TP 16 holds one
	// per GPU, each replicated on two (as vLLM shards it).
	"llama-3.1-405b": {
		Layers: 126, Heads: 128, KVHeads: 8, HeadDim: 128, Hidden: 16384, Vocab: 128256,
		DType: "bfloat16", DTypeBytes: 2, Intermediate: 53248,
	},
	// Qwen/Qwen3-32B: head_dim 128 although hidden/heads is 80.
	"qwen3-32b": {
		Layers: 64, Heads: 64, KVHeads: 8, HeadDim: 128, Hidden: 5120, Vocab: 151936,
		DType: "bfloat16", DTypeBytes: 2, Intermediate: 25600,
	},
	// deepseek-ai/DeepSeek-V3: MLA caches kv_lora_rank + qk_rope_head_dim
	// values per token and layer; the first 3 layers are dense.
	"deepseek-v3": {
		Layers: 61, Heads: 128, KVHeads: 128, HeadDim: 192, Hidden: 7168, Vocab: 129280,
		DType: "bfloat16", DTypeBytes: 2, Intermediate: 18432,
		Experts: 256, ExpertsPerToken: 8, MoEIntermediate: 2048,
		SharedExperts: 1, SharedIntermediate: 2048, DenseLayers: 3,
		KVLoraRank: 512, QLoraRank: 1536, QKRopeHeadDim: 64, QKNopeHeadDim: 128, VHeadDim: 128,
	},
}

// DefaultModel is the model sweeps use when none is named.
const DefaultModel = "qwen3-coder-30b-a3b"

// ModelNames lists the preset names, sorted.
func ModelNames() []string {
	return slices.Sorted(maps.Keys(presets))
}

// hfIDs are the Hugging Face ids (lower case) of the presets, as vLLM and
// its users name the models: `--model Qwen/Qwen3-Coder-30B-A3B-Instruct`
// is the qwen3-coder-30b-a3b preset.
var hfIDs = map[string]string{
	"qwen/qwen3-coder-30b-a3b-instruct":      "qwen3-coder-30b-a3b",
	"qwen/qwen3-coder-30b-a3b-instruct-fp8":  "qwen3-coder-30b-a3b",
	"meta-llama/llama-3.1-8b-instruct":       "llama-3.1-8b",
	"meta-llama/llama-3.1-8b":                "llama-3.1-8b",
	"meta-llama/meta-llama-3.1-8b-instruct":  "llama-3.1-8b",
	"meta-llama/llama-3.1-70b-instruct":      "llama-3.1-70b",
	"meta-llama/llama-3.1-70b":               "llama-3.1-70b",
	"meta-llama/meta-llama-3.1-70b-instruct": "llama-3.1-70b",
	"meta-llama/llama-3.1-405b-instruct":     "llama-3.1-405b",
	"meta-llama/llama-3.1-405b":              "llama-3.1-405b",
	"qwen/qwen3-32b":                         "qwen3-32b",
	"deepseek-ai/deepseek-v3":                "deepseek-v3",
	"deepseek-ai/deepseek-v3-0324":           "deepseek-v3",
}

// LookupModel returns the geometry of the preset named name, or whose
// Hugging Face id name is (case does not matter), with blocks of
// DefaultBlockTokens tokens; the geometry's Model is the preset's name.
func LookupModel(name string) (Geometry, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if p, ok := hfIDs[key]; ok {
		key = p
	}
	g, ok := presets[key]
	if !ok {
		return Geometry{}, fmt.Errorf("unknown model %q (known: %s, or their Hugging Face ids; or pass --model-config PATH)", name, strings.Join(ModelNames(), ", "))
	}
	g.Model = key
	g.BlockTokens = DefaultBlockTokens
	return g, nil
}

// MaxBlockTokens bounds the tokens of one KV block (vLLM's largest block
// sizes are in the hundreds; beyond this a block is a mistake).
const MaxBlockTokens = 1 << 16

// Resolve returns the geometry of preset model or, when config is not
// empty, of that config.json (a file or a model directory), with blocks
// of blockTokens tokens; model "" means DefaultModel. Its errors name the
// option at fault: "model", "model-config" or "block-size".
func Resolve(model, config string, blockTokens int) (Geometry, error) {
	var g Geometry
	var err error
	switch {
	case model != "" && config != "":
		return Geometry{}, option.Errorf("model-config", "give a model preset or a config, not both")
	case config != "":
		if g, err = ParseConfig(config); err != nil {
			return Geometry{}, option.Wrap("model-config", err)
		}
	default:
		if model == "" {
			model = DefaultModel
		}
		if g, err = LookupModel(model); err != nil {
			return Geometry{}, option.Wrap("model", err)
		}
	}
	if err := option.Range("block-size", blockTokens, 1, MaxBlockTokens, "tokens"); err != nil {
		return Geometry{}, err
	}
	g.BlockTokens = blockTokens
	if err := g.Validate(); err != nil {
		field := "model"
		if config != "" {
			field = "model-config"
		}
		return Geometry{}, option.Wrap(field, err)
	}
	return g, nil
}
