package probe

import (
	"github.com/kvtier/kvtier/serving"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readScrape parses a recorded /metrics page of testdata/metrics.
func readScrape(t *testing.T, name string) serving.Snapshot {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "metrics", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := serving.ParseMetrics(f, "Qwen/Qwen3-Coder-30B-A3B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVerifyGenerations verifies one 8192-token request against /metrics
// pages written by hand from vLLM's metric definitions for each
// generation of its counters: before external counters (0.10), with the
// double count of async connectors (0.11.1), with external queries over
// the whole prompt (0.12 to 0.15), after PR #30522 with
// prompt_tokens_by_source (0.16 on), and with the per-tier split of newer
// code.
func TestVerifyGenerations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version, before, after, tier string
		cached                       int // usage cached_tokens; -1 absent
		gen                          string
		ok                           bool
		by, reason                   string
	}{
		{"0.10.1", "v0.10.1-before.prom", "v0.10.1-after-gpu-hit.prom", "gpu", -1, "none", true, "prefix_cache_hits", ""},
		{"0.10.1", "v0.10.1-before.prom", "v0.10.1-after-cpu-hit.prom", "cpu", 8176, "none", true, "usage.cached_tokens - prefix_cache_hits", ""},
		{"0.10.1", "v0.10.1-before.prom", "v0.10.1-after-cpu-hit.prom", "cpu", -1, "none", false, "", "usage has no cached_tokens"},
		{"0.10.1", "v0.10.1-before.prom", "v0.10.1-after-gpu-hit.prom", "cpu", 8176, "none", false, "usage.cached_tokens - prefix_cache_hits", "still in GPU memory"},
		// The async connector's second record doubles the queries: not
		// concurrent traffic in this generation.
		{"0.11.1", "v0.11.1-before.prom", "v0.11.1-after-nixl-remote.prom", "remote", -1, "double-count", true, "external_prefix_cache_hits", ""},
		// The same page read as a later generation is ambiguous.
		{"0.13.0", "v0.11.1-before.prom", "v0.11.1-after-nixl-remote.prom", "remote", -1, "whole-prompt", false, "", "concurrent traffic"},
		{"0.13.0", "v0.13.0-before.prom", "v0.13.0-after-gpu-hit.prom", "gpu", -1, "whole-prompt", true, "prefix_cache_hits", ""},
		{"0.13.0", "v0.13.0-before.prom", "v0.13.0-after-cpu-hit.prom", "cpu", -1, "whole-prompt", true, "external_prefix_cache_hits", ""},
		{"0.13.0", "v0.13.0-before.prom", "v0.13.0-after-gpu-hit.prom", "cpu", -1, "whole-prompt", false, "external_prefix_cache_hits", "still in GPU memory"},
		{"0.18.1", "v0.18.1-before.prom", "v0.18.1-after-gpu-hit.prom", "gpu", -1, "queried+by_source", true, "prompt_tokens_by_source", ""},
		{"0.18.1", "v0.18.1-before.prom", "v0.18.1-after-cpu-hit.prom", "cpu", -1, "queried+by_source", true, "prompt_tokens_by_source", ""},
		{"0.18.1", "v0.18.1-before.prom", "v0.18.1-after-cpu-hit.prom", "gpu", -1, "queried+by_source", false, "prompt_tokens_by_source", "not served from the GPU prefix cache"},
		{"0.18.1", "v0.18.1-before.prom", "v0.18.1-after-gpu-hit.prom", "miss", -1, "queried+by_source", false, "prompt_tokens_by_source", "already cached"},
		{"0.18.1", "v0.18.1-before.prom", "v0.18.1-after-concurrent.prom", "cpu", -1, "queried+by_source", false, "prompt_tokens", "concurrent traffic: prompt_tokens rose by 16384"},
		// A version kvtier cannot place: any query count is accepted.
		{"0.1.dev1+gabc", "v0.11.1-before.prom", "v0.11.1-after-nixl-remote.prom", "remote", -1, "unknown", true, "external_prefix_cache_hits", ""},
		{"0.30.0.dev5", "main-before.prom", "main-after-store-remote.prom", "remote", -1, "unknown+by_source+cache_tier", true, "prompt_tokens_cached_by_source", ""},
		{"0.30.0", "main-before.prom", "main-after-p2p-for-cpu.prom", "cpu", -1, "queried+by_source+cache_tier", false, "prompt_tokens_cached_by_source", "needs 8176 tokens from host"},
		{"0.30.0", "main-before.prom", "main-after-p2p-for-cpu.prom", "remote", -1, "queried+by_source+cache_tier", true, "prompt_tokens_cached_by_source", ""},
	}
	for _, tt := range tests {
		t.Run(tt.version+"/"+tt.after+"/"+tt.tier, func(t *testing.T) {
			t.Parallel()
			before, after := readScrape(t, tt.before), readScrape(t, tt.after)
			g := GenerationOf(tt.version, before)
			if g.String() != tt.gen {
				t.Errorf("generation %s, want %s", g, tt.gen)
			}
			var u *serving.Usage
			if tt.cached >= 0 {
				n := tt.cached
				u = &serving.Usage{PromptTokens: 8192}
				u.PromptTokensDetails = &struct {
					CachedTokens *int `json:"cached_tokens"`
				}{&n}
			}
			v := Verify(Check{Tier: tt.tier, L: 8192, Grain: 16, Gen: g}, serving.Sub(before, after), nil, u)
			if v.OK != tt.ok || v.By != tt.by || !strings.Contains(v.Reason, tt.reason) {
				t.Errorf("Verify = %+v, want ok=%v by %q reason containing %q", v, tt.ok, tt.by, tt.reason)
			}
		})
	}
}

func TestParseRelease(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want release
		ok   bool
	}{
		{"0.18.1", release{0, 18, 1}, true}, {"v0.11.1rc2", release{0, 11, 1}, true}, {"0.12.0+cu128", release{0, 12, 0}, true},
		{"0.9", release{0, 9, 0}, true}, {"0.1.dev1+g1234", release{}, false}, {"sglang", release{}, false}, {"", release{}, false},
	} {
		got, ok := parseRelease(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseRelease(%q) = %v %v, want %v %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
