package kv

import "testing"

// FuzzParseConfig: a config.json parses into a geometry that passes
// Validate (so that every table sized from it is bounded), or fails
// naming the file; it never panics.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 32, "torch_dtype": "bfloat16"}`,
		`{"num_hidden_layers": 2000000, "num_attention_heads": 4, "hidden_size": 32}`,
		`{"text_config": {"num_hidden_layers": 61, "num_attention_heads": 128, "hidden_size": 7168, "kv_lora_rank": 512, "qk_rope_head_dim": 64}}`,
		`{"num_hidden_layers": 1e300, "num_attention_heads": -4, "hidden_size": "x"}`,
		`[]`, `null`, `{"num_experts": 1e9, "num_experts_per_tok": 1e9}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := parseConfig(b, "config.json")
		if err != nil {
			return
		}
		g.BlockTokens = DefaultBlockTokens
		if err := g.Validate(); err != nil {
			t.Fatalf("parseConfig accepted a geometry Validate refuses: %v", err)
		}
		if g.BytesPerToken() <= 0 || g.BlockBytes() <= 0 {
			t.Fatalf("geometry %+v: %d bytes per token", g, g.BytesPerToken())
		}
	})
}
