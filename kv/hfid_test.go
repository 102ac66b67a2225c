package kv

import "testing"

// TestLookupModelHFID: the Hugging Face id of a preset's model resolves
// to the preset (before, sweep refused --model
// Qwen/Qwen3-Coder-30B-A3B-Instruct).
func TestLookupModelHFID(t *testing.T) {
	t.Parallel()
	for id, preset := range map[string]string{
		"Qwen/Qwen3-Coder-30B-A3B-Instruct": "qwen3-coder-30b-a3b",
		"meta-llama/Llama-3.1-8B-Instruct":  "llama-3.1-8b",
		"deepseek-ai/DeepSeek-V3":           "deepseek-v3",
	} {
		g, err := LookupModel(id)
		want, _ := LookupModel(preset)
		if err != nil || g.Model != preset || g.BlockBytes() != want.BlockBytes() {
			t.Errorf("%s: %v, model %q, block %d; want %s", id, err, g.Model, g.BlockBytes(), preset)
		}
	}
	if _, err := LookupModel("Qwen/No-Such-Model"); err == nil {
		t.Error("an unknown id resolved")
	}
}
