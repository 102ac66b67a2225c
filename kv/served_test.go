package kv

import "testing"

// TestServedBlockBytes: a served model's name, its Hugging Face id or
// base name, finds its preset's block bytes; an unknown name none.
func TestServedBlockBytes(t *testing.T) {
	for _, tt := range []struct {
		model string
		bs    int
		want  int64
	}{
		{"Qwen/Qwen3-Coder-30B-A3B-Instruct", 16, 1572864},
		{"qwen3-coder-30b-a3b", 32, 2 * 1572864},
		{"meta-llama/Llama-3.1-8B-Instruct", 16, 2 * 32 * 8 * 128 * 2 * 16},
		{"my-finetune", 16, 0},
	} {
		if got := ServedBlockBytes(tt.model, tt.bs); got != tt.want {
			t.Errorf("ServedBlockBytes(%q, %d) = %d, want %d", tt.model, tt.bs, got, tt.want)
		}
	}
}
