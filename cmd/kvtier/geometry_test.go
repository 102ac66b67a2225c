package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/tiers"
)

// checkGolden compares got with testdata/name; KVTIER_UPDATE_GOLDEN=1
// rewrites the file instead.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	compareGolden(t, name, got, func(got, want string) error {
		if got != want {
			return errors.New("not the same")
		}
		return nil
	})
}

// checkGoldenCSV is checkGolden for a CSV file, compared by named
// columns (resultstest.SameCSV): a column added to the schema and empty
// in these rows changes nothing.
func checkGoldenCSV(t *testing.T, name, got string) {
	t.Helper()
	compareGolden(t, name, got, resultstest.SameCSV)
}

// compareGolden compares got with testdata/name by same, or writes it
// there when KVTIER_UPDATE_GOLDEN=1.
func compareGolden(t *testing.T, name, got string, same func(got, want string) error) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("KVTIER_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with KVTIER_UPDATE_GOLDEN=1 to create it)", err)
	}
	if err := same(got, string(want)); err != nil {
		t.Errorf("output differs from %s (KVTIER_UPDATE_GOLDEN=1 writes it again): %v\n--- got\n%s\n--- want\n%s", path, err, got, want)
	}
}

func TestGeometryGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{"geometry_qwen3_coder.golden", []string{"geometry", "--model", "qwen3-coder-30b-a3b"}},
		{"geometry_deepseek_v3.golden", []string{"geometry", "--model", "deepseek-v3"}},
		{"geometry_llama_70b_bs32.golden", []string{"geometry", "--model", "llama-3.1-70b", "--block-size", "32"}},
		{"geometry_tiny_config.golden", []string{"geometry", "--model-config", "testdata/tiny_config.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != exitOK || noisy(stderr) {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			checkGolden(t, tt.golden, stdout)
		})
	}
}

func TestGeometryQwen3CoderNumbers(t *testing.T) {
	_, stdout, _ := runCLI(t, "geometry", "--model", "qwen3-coder-30b-a3b")
	for _, want := range []string{"98304 bytes/token", "1572864 bytes/block", "layerwise: 96 chunks of 16384 bytes", "blockwise: 1 chunks of 1572864 bytes"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestBadInputGolden runs every bad-input case of geometry and sweep and
// compares the one stderr line and exit status of each with a golden
// file; no case may write anything to stdout.
func TestBadInputGolden(t *testing.T) {
	cases := [][]string{
		{"geometry", "--model", "gpt-5"},
		{"geometry", "--block-size", "0"},
		{"geometry", "--model", "llama-3.1-8b", "--model-config", "testdata/tiny_config.json"},
		{"geometry", "--model-config", "testdata/malformed_config.json"},
		{"geometry", "--model-config", "testdata/bad_dtype_config.json"},
		{"geometry", "--model-config", "testdata/missing.json"},
		{"geometry", "--nope"},
		{"sweep", "--tiers", "host,tape"},
		{"sweep", "--model", "gpt-5"},
		{"sweep", "--layout", "rowwise"},
		{"sweep", "--prefix", "1k,,2k"},
		{"sweep", "--prefix", "0"},
		{"sweep", "--prefix", "1.5x"},
		{"sweep", "--reps", "-1"},
		{"sweep", "--warmup", "-2"},
		{"sweep", "--copy", "dma"},
		{"sweep", "--host-mem", "hbm"},
		{"sweep", "--transport", "udp"},
		{"sweep", "--io", "aio,uring"},
		{"sweep", "--iodepth", "0", "--disk-max", "lots"},
		{"sweep", "--disk-dir", "testdata/no-such-dir"},
		{"sweep", "--budget", "soon"},
		{"sweep", "--backend", "tpu"},
		{"sweep", "--model-config", "testdata/missing.json"},
		{"sweep", "--out", "testdata/tiny_config.json/run"},
		{"sweep", "--reps", "0", "--prefix", "-4", "--tiers", "tape"},
		{"sweep", "extra-arg"},
		// Runs that could measure nothing, and flags that would not apply.
		{"sweep", "--direction", "store", "--tiers", "recompute"},
		{"sweep", "--sync", "fdatasync"},
		{"sweep", "--sync", "fdatasync", "--direction", "store", "--tiers", "host"},
		{"sweep", "--tiers", "remote", "--ib-tc", "106"},
		{"transfer", "--ib-sl", "3"},
	}
	var got strings.Builder
	for _, args := range cases {
		code, stdout, stderr := runCLI(t, args...)
		if stdout != "" {
			t.Errorf("%v wrote to stdout: %q", args, stdout)
		}
		if n := strings.Count(stderr, "\n"); n != 1 {
			t.Errorf("%v: %d stderr lines, want 1:\n%s", args, n, stderr)
		}
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
		got.WriteString("$ kvtier " + strings.Join(args, " ") + "\n")
		// The lists of registered tiers and backends grow as packages are
		// linked in; the golden file holds placeholders for them.
		stderr = strings.ReplaceAll(stderr, "(known: "+strings.Join(tiers.Names(), ", ")+")", "(known: <tiers>)")
		stderr = strings.ReplaceAll(stderr, "(known: auto, "+strings.Join(tiers.BackendNames(), ", ")+")", "(known: auto, <backends>)")
		got.WriteString(stderr)
		got.WriteString("exit " + string(rune('0'+code)) + "\n\n")
	}
	checkGolden(t, "bad_input.golden", got.String())
	if _, err := os.Stat("results"); err == nil {
		t.Error("a bad-input run created a results directory")
	}
}

// noisy reports whether a run's stderr, beyond its progress lines, says
// something went wrong: a warning or an error.
func noisy(stderr string) bool {
	s := strings.ToLower(stderr)
	return strings.Contains(s, "warning") || strings.Contains(s, "error")
}
