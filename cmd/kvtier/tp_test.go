package main

import (
	"strings"
	"testing"
)

// TestTPAndKVDType: --tp and --kv-dtype size KV per GPU in every suite
// that sizes KV, a TP that neither divides the KV heads nor is a
// multiple of them is refused before anything runs, and a TP above the
// KV heads replicates them as vLLM does.
func TestTPAndKVDType(t *testing.T) {
	t.Parallel()
	code, out, errs := runCLI(t, "geometry", "--model", "qwen3-coder-30b-a3b", "--tp", "2", "--kv-dtype", "fp8")
	if code != exitOK {
		t.Fatalf("geometry: exit %d, %s", code, errs)
	}
	for _, want := range []string{"per GPU (tp=2 kv=fp8): 2 of 4 KV heads, fp8 (1 bytes)", "24576 bytes/token", "layerwise: 96 chunks of 4096 bytes"} {
		if !strings.Contains(out, want) {
			t.Errorf("geometry lacks %q:\n%s", want, out)
		}
	}
	for _, args := range [][]string{
		{"geometry"}, {"sweep", "--tiers", "host"}, {"transfer"}, {"sim"}, {"trace", "x.jsonl"}, {"knee"}, {"replay", "--base-url", "http://127.0.0.1:1", "--model", "qwen3-coder-30b-a3b"},
	} {
		code, _, errs := runCLI(t, append(args, "--tp", "6")...)
		if code != exitUsage || !strings.Contains(errs, "--tp: qwen3-coder-30b-a3b has 4 KV heads: 6 GPUs can neither split them") {
			t.Errorf("%s --tp 6: exit %d, stderr %q", args[0], code, errs)
		}
	}
	// vLLM replicates KV heads when TP exceeds them: 405B's 8 at TP 16 is
	// one head per GPU, each on two; vLLM's dtype spellings are taken.
	code, out, errs = runCLI(t, "geometry", "--model", "llama-3.1-405b", "--tp", "16", "--kv-dtype", "fp8_e4m3")
	if code != exitOK {
		t.Fatalf("geometry 405b tp 16: exit %d, %s", code, errs)
	}
	for _, want := range []string{"per GPU (tp=16 kv=fp8_e4m3): 1 of 8 KV heads (each replicated on 2 GPUs), fp8_e4m3 (1 bytes)", "32256 bytes/token"} {
		if !strings.Contains(out, want) {
			t.Errorf("geometry 405b lacks %q:\n%s", want, out)
		}
	}
	if code, out, errs := runCLI(t, "geometry", "--kv-dtype", "auto"); code != exitOK || strings.Contains(out, "per GPU") {
		t.Errorf("--kv-dtype auto: exit %d, %s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "geometry", "--kv-dtype", "int4"); code != exitUsage || !strings.Contains(errs, "--kv-dtype: unknown KV dtype") {
		t.Errorf("--kv-dtype int4: exit %d, stderr %q", code, errs)
	}
}

// TestNUMAFlagRefused: kvtier sweep refuses a --numa that is no node,
// naming the flag (cli's TestNUMAFlag checks the values).
func TestNUMAFlagRefused(t *testing.T) {
	t.Parallel()
	if code, _, errs := runCLI(t, "sweep", "--numa", "near"); code != exitUsage || !strings.Contains(errs, "--numa") {
		t.Errorf("--numa near: exit %d, %q", code, errs)
	}
}
