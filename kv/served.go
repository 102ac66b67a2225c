package kv

import "strings"

// ServedBlockBytes returns the KV bytes of a block of blockSize tokens of
// the model a server serves under the name model, when that name matches
// a preset ("Qwen/Qwen3-Coder-30B-A3B-Instruct", or its base name, with
// or without -Instruct or -2507, is qwen3-coder-30b-a3b); 0 when none
// does.
func ServedBlockBytes(model string, blockSize int) int64 {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	for _, n := range []string{name, strings.TrimSuffix(name, "-instruct"), strings.TrimSuffix(strings.TrimSuffix(name, "-instruct"), "-2507")} {
		if g, err := LookupModel(n); err == nil {
			g.BlockTokens = blockSize
			return g.BlockBytes()
		}
	}
	return 0
}
