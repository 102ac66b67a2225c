package kv

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvtier/kvtier/internal/regfile"
)

// dtypeBytes maps the dtype names config.json files use to their width.
var dtypeBytes = map[string]int{
	"bfloat16": 2, "bf16": 2,
	"float16": 2, "fp16": 2, "half": 2,
	"float32": 4, "fp32": 4, "float": 4,
	"float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1,
}

// ParseConfig reads a Hugging Face config.json and returns the model's KV
// geometry with blocks of DefaultBlockTokens tokens. Absent fields take
// the defaults transformers gives them: num_key_value_heads = heads,
// head_dim = hidden/heads. Multimodal configs whose language model sits
// under "text_config" are read from there. MoE fields (num_experts or
// n_routed_experts, num_experts_per_tok, moe_intermediate_size,
// shared_expert_intermediate_size or n_shared_experts,
// first_k_dense_replace, decoder_sparse_step) and MLA fields
// (kv_lora_rank, q_lora_rank, qk_rope_head_dim, qk_nope_head_dim,
// v_head_dim) are honoured. path may be a model directory holding
// config.json. Errors name the file and the field.
func ParseConfig(path string) (Geometry, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "config.json") // a model directory
	}
	b, err := regfile.Read(path, MaxConfigBytes)
	if err != nil {
		return Geometry{}, fmt.Errorf("model config: %w", err)
	}
	g, err := parseConfig(b, path)
	if err != nil {
		return Geometry{}, err
	}
	return g, nil
}

// MaxConfigBytes bounds a config.json: published ones are a few KiB.
const MaxConfigBytes = 4 << 20

// cfgFields reads typed fields out of a decoded config.json object.
type cfgFields struct {
	path string
	m    map[string]any
	err  error
}

func (c *cfgFields) fail(field, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("model config %s: field %s: %s", c.path, field, fmt.Sprintf(format, args...))
	}
}

// first returns the value and name of the first present field of names
// (JSON null counts as absent); the name is "" when none is.
func (c *cfgFields) first(names ...string) (any, string) {
	for _, n := range names {
		if v, ok := c.m[n]; ok && v != nil {
			return v, n
		}
	}
	return nil, ""
}

// int returns the first present field of names as a non-negative integer,
// or def when none is present.
func (c *cfgFields) int(def int, names ...string) int {
	v, n := c.first(names...)
	if n == "" {
		return def
	}
	f, ok := v.(float64)
	if !ok {
		c.fail(n, "want a number, got %s", jsonType(v))
		return def
	}
	if f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		c.fail(n, "want a non-negative integer, got %v", f)
		return def
	}
	return int(f)
}

// str returns the first present field of names as a string, and its
// name ("" when none is present).
func (c *cfgFields) str(names ...string) (string, string) {
	v, n := c.first(names...)
	if n == "" {
		return "", ""
	}
	s, ok := v.(string)
	if !ok {
		c.fail(n, "want a string, got %s", jsonType(v))
	}
	return s, n
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func parseConfig(b []byte, path string) (Geometry, error) {
	m, err := configObject(b, path)
	if err != nil {
		return Geometry{}, err
	}
	c := &cfgFields{path: path, m: m}
	g := Geometry{Model: path, BlockTokens: DefaultBlockTokens}
	c.attention(&g)
	c.mla(&g)
	c.moe(&g)
	if err := c.dtype(&g); err != nil {
		return Geometry{}, err
	}
	return g, checkConfig(g, path)
}

// configObject decodes a config.json into the object its language model
// is described by: the top level, or for a multimodal config its
// text_config over the top-level fields it does not override
// (torch_dtype often lives at the top).
func configObject(b []byte, path string) (map[string]any, error) {
	var top map[string]any
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("model config %s: malformed JSON: %w", path, err)
	}
	if top == nil {
		return nil, fmt.Errorf("model config %s: not a JSON object", path)
	}
	tc, ok := top["text_config"].(map[string]any)
	if _, has := top["num_hidden_layers"]; !ok || has {
		return top, nil
	}
	m := map[string]any{}
	maps.Copy(m, top)
	maps.Copy(m, tc)
	return m, nil
}

// attention reads the layer count, widths and attention heads.
func (c *cfgFields) attention(g *Geometry) {
	g.Layers = c.int(0, "num_hidden_layers", "n_layer", "num_layers")
	g.Heads = c.int(0, "num_attention_heads", "n_head")
	g.Hidden = c.int(0, "hidden_size", "n_embd")
	g.Vocab = c.int(0, "vocab_size")
	g.Intermediate = c.int(0, "intermediate_size", "ffn_hidden_size")
	g.KVHeads = c.int(g.Heads, "num_key_value_heads", "num_kv_heads")
	headDef := 0
	if g.Heads > 0 {
		headDef = g.Hidden / g.Heads
	}
	g.HeadDim = c.int(headDef, "head_dim")
}

// mla reads multi-head latent attention's ranks and head widths.
func (c *cfgFields) mla(g *Geometry) {
	g.KVLoraRank = c.int(0, "kv_lora_rank")
	g.QLoraRank = c.int(0, "q_lora_rank")
	g.QKRopeHeadDim = c.int(0, "qk_rope_head_dim")
	g.QKNopeHeadDim = c.int(0, "qk_nope_head_dim")
	g.VHeadDim = c.int(0, "v_head_dim")
	if !g.MLA() {
		return
	}
	if _, has := c.m["head_dim"]; !has && g.QKNopeHeadDim+g.QKRopeHeadDim > 0 {
		g.HeadDim = g.QKNopeHeadDim + g.QKRopeHeadDim
	}
	if g.VHeadDim == 0 {
		g.VHeadDim = g.HeadDim
	}
}

// moe reads the experts, routed and shared, and the dense layers.
func (c *cfgFields) moe(g *Geometry) {
	g.Experts = c.int(0, "num_experts", "n_routed_experts", "num_local_experts")
	g.ExpertsPerToken = c.int(0, "num_experts_per_tok", "moe_topk")
	g.MoEIntermediate = c.int(g.Intermediate, "moe_intermediate_size")
	sharedInter := c.int(0, "shared_expert_intermediate_size")
	g.SharedExperts = c.int(0, "n_shared_experts", "num_shared_experts")
	switch {
	case sharedInter > 0 && g.SharedExperts == 0:
		g.SharedExperts = 1 // Qwen2-MoE: one shared expert of that width
		g.SharedIntermediate = sharedInter
	case sharedInter > 0:
		g.SharedIntermediate = sharedInter
	case g.SharedExperts > 0:
		g.SharedIntermediate = g.MoEIntermediate * g.SharedExperts
	}
	g.DenseLayers = c.int(0, "first_k_dense_replace")
	if step := c.int(1, "decoder_sparse_step"); step > 1 && g.Experts > 0 && g.Layers > 0 {
		// Only every step-th layer is sparse. FLOPs do not depend on where
		// the dense layers sit, so count them as leading dense layers.
		g.DenseLayers = g.Layers - g.Layers/step
	}
	if g.Experts == 0 {
		g.ExpertsPerToken, g.MoEIntermediate, g.SharedExperts, g.SharedIntermediate, g.DenseLayers = 0, 0, 0, 0, 0
	} else if g.ExpertsPerToken == 0 {
		c.fail("num_experts_per_tok", "must be set for a model with %d experts", g.Experts)
	}
}

// dtype reads the KV dtype (bfloat16 when absent).
func (c *cfgFields) dtype(g *Geometry) error {
	dt, field := c.str("torch_dtype", "dtype")
	if c.err != nil {
		return c.err
	}
	if field == "" {
		dt, field = "bfloat16", "torch_dtype"
	}
	n, ok := dtypeBytes[strings.ToLower(dt)]
	if !ok {
		return fmt.Errorf("model config %s: field %s: unknown dtype %q (known: bfloat16, float16, float32, float8_e4m3fn, float8_e5m2)", c.path, field, dt)
	}
	g.DType, g.DTypeBytes = strings.ToLower(dt), n
	if g.DType == "bf16" {
		g.DType = "bfloat16"
	}
	return nil
}

// checkConfig reports the first field that leaves g unusable.
func checkConfig(g Geometry, path string) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"num_hidden_layers", g.Layers}, {"num_attention_heads", g.Heads}, {"hidden_size", g.Hidden}} {
		if f.v <= 0 {
			return fmt.Errorf("model config %s: field %s: missing or zero", path, f.name)
		}
	}
	if !g.MLA() && (g.KVHeads <= 0 || g.HeadDim <= 0) {
		return fmt.Errorf("model config %s: field num_key_value_heads/head_dim: must be positive", path)
	}
	if g.DenseLayers > g.Layers {
		return fmt.Errorf("model config %s: field first_k_dense_replace: %d exceeds num_hidden_layers %d", path, g.DenseLayers, g.Layers)
	}
	if err := g.Validate(); err != nil {
		return fmt.Errorf("model config %s: %w", path, err)
	}
	return nil
}
