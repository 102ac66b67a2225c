package main

import (
	"strings"
	"testing"
)

// TestTPAndKVDType: --tp and --kv-dtype size KV per GPU in every suite
// that sizes KV, and a TP that does not divide the KV heads is refused
// before anything runs.
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
		code, _, errs := runCLI(t, append(args, "--tp", "8")...)
		if code != exitUsage || !strings.Contains(errs, "--tp: qwen3-coder-30b-a3b has 4 KV heads, which do not divide by 8") {
			t.Errorf("%s --tp 8: exit %d, stderr %q", args[0], code, errs)
		}
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
