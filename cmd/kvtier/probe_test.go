package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/vllmsim/simtest"
)

func TestProbeCommandSim(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	// --sim-time-scale 1 is still accepted, with a deprecation warning.
	stdout, stderr := mustRunCLI(t, "probe", "--sim", "--sim-time-scale", "1", "--prefix", "1k", "--reps", "1", "--out", out)
	if strings.TrimSpace(stdout) != filepath.Join(out, probe.File) {
		t.Errorf("stdout %q", stdout)
	}
	rows, header, err := results.ReadCSV(filepath.Join(out, probe.File))
	if err != nil {
		t.Fatal(err)
	}
	if len(header) != len(results.CommonColumns)+len(probe.Suite.Main().Columns) {
		t.Errorf("header %v", header)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4 (4 tiers × 1 prefix)", len(rows))
	}
	if !strings.Contains(stderr, "kvtier probe: warning: --sim-time-scale is deprecated") {
		t.Errorf("no deprecation warning for --sim-time-scale: %q", stderr)
	}
	for _, r := range rows {
		// On a loaded machine the real-time sim may fall behind: such a
		// row says so instead of being verified.
		lagged := strings.Contains(r.Get("verify_reason"), "further behind real time")
		if r.Status != results.StatusOK || (r.Get("verified") != "true" && !lagged) || r.Get("simulated") != "true" {
			t.Errorf("%s %d: %s %q verified=%s %q", r.Tier, r.PrefixTokens, r.Status, r.Reason, r.Get("verified"), r.Get("verify_reason"))
		}
		// qwen3-coder-30b-a3b: 1,572,864 bytes per 16-token block.
		if r.Suite != "probe" || r.Backend != "http" || r.Transport != "http" || r.Bytes != r.Blocks*1572864 {
			t.Errorf("row %+v", r)
		}
	}
	m, err := results.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Notes["client_overhead_ttft_p50_s"].(float64); !ok || v <= 0 {
		t.Errorf("notes %v", m.Notes)
	}
	if m.Settings["simulated"] != "true" || m.Settings["server_version"] != "0.18.1" || m.Settings["counter_generation"] != "queried+by_source" ||
		m.Settings["block_size_source"] != "vllm:cache_config_info" || m.Settings["cpu_capacity_source"] != "vllm:cache_config_info num_cpu_blocks" {
		t.Errorf("settings %v", m.Settings)
	}
	if _, err := os.Stat(filepath.Join(out, "probe_summary.csv")); err != nil {
		t.Error(err)
	}
}

func TestProbeCommandErrors(t *testing.T) {
	downURL := "http://" + freePort(t)
	tests := []struct {
		name string
		args []string
		want []string // substrings of the one line on stderr
	}{
		{"unreachable", []string{"--base-url", downURL}, []string{"kvtier probe: endpoint unreachable: " + downURL}},
		{"no endpoint", []string{}, []string{"--base-url URL is required"}},
		{"everything wrong at once", []string{"--base-url", "ftp://x", "--tiers", "gpu,disk", "--prefix", "1k,,2k", "--reps", "0", "--connector", "ucx"},
			[]string{"--base-url", `unknown tier "disk"`, "--prefix", "--reps: want 1 to 1000000, got 0", `--connector: "ucx"`}},
		{"bad duration", []string{"--sim", "--timeout", "soon"}, []string{`invalid argument "soon" for "--timeout"`}},
		{"sim and endpoint", []string{"--sim", "--base-url", "http://127.0.0.1:1"}, []string{"--sim and --base-url exclude each other"}},
		{"scaled sim", []string{"--sim", "--sim-time-scale", "0.1"}, []string{"--sim-time-scale: 0.1: removed"}},
		{"new flags wrong", []string{"--sim", "--api", "grpc", "--mooncake-shape", "v4", "--cpu-capacity", "lots", "--offload-block", "-3"},
			[]string{`--api: "grpc"`, `--mooncake-shape: "v4"`, "--cpu-capacity", "--offload-block"}},
		// Said once, by the flag's bounds (the library's 0 is not the flag's).
		{"bootstrap port", []string{"--sim", "--bootstrap-port", "70000"}, []string{"kvtier probe: --bootstrap-port: want 1 to 65535, got 70000\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KVTIER_ENDPOINT", "")
			out := filepath.Join(t.TempDir(), "run")
			code, _, stderr := runCLI(t, append([]string{"probe", "--out", out}, tt.args...)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a results directory was created for bad input")
			}
		})
	}
}

func TestProbeCommandEnvEndpoint(t *testing.T) {
	url := "http://" + freePort(t)
	t.Setenv("KVTIER_ENDPOINT", url)
	code, _, stderr := runCLI(t, "probe", "--out", filepath.Join(t.TempDir(), "r"))
	if code != exitUsage || !strings.Contains(stderr, url) {
		t.Errorf("exit %d, stderr %q: want the env endpoint tried", code, stderr)
	}
}

// A probe of a kvtier sim started on its own (--base-url, not --sim)
// labels its table simulated, as its rows are, and says a skip once
// however many rows it skips.
func TestProbeExternalSimLabels(t *testing.T) {
	t.Parallel()
	// In real time, at 1k tokens (90 ms a miss): a loaded machine's lag
	// is a small share of that.
	_, url := simtest.Start(t, vllmsim.Config{GPUBlocks: 512, TimeScale: 1, EnablePromptTokensDetails: true})
	_, stderr := mustRunCLI(t, "probe", "--base-url", url, "--prefix", "1k", "--tiers", "miss,remote", "--reps", "2", "--out", filepath.Join(t.TempDir(), "r"))
	if strings.Contains(stderr, "(measured)") || !strings.Contains(stderr, "TTFT p50 of verified requests (simulated)") && !strings.Contains(stderr, "no TTFT table") {
		t.Errorf("the table of a simulator's figures is not labelled simulated:\n%s", stderr)
	}
	if n := strings.Count(stderr, "remote tier needs --producer"); n != 1 {
		t.Errorf("the remote tier's skip said %d times, want once:\n%s", n, stderr)
	}
}
