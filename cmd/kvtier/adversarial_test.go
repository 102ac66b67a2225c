package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/kvtier/kvtier/cli"
	"time"
)

// flagsOf returns the flags command cmd lists in its usage, with their
// types.
func flagsOf(t *testing.T, cmd string) map[string]string {
	t.Helper()
	var stderr bytes.Buffer
	dispatch(context.Background(), &bytes.Buffer{}, &stderr, []string{cmd, "-h"})
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)(?:\[=[^\]]*\])?(?: (\w+))?`).FindAllStringSubmatch(stderr.String(), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// numericStrings are the string flags that hold sizes, token counts,
// durations or lists of them.
var numericStrings = []string{
	"sizes", "prefix", "pool", "decode", "prefill", "cpu-capacity", "offload-block", "chunk-label",
	"max-model-len", "max-num-batched-tokens", "hbm", "dram", "disk", "remote", "instances", "window",
	"budget", "timeout", "inject-after", "rendezvous-timeout", "system-prompt", "turn-tokens",
	"output-tokens", "think", "arrival-window", "peer-copy", "capacities", "capacity-blocks", "knees", "max-output",
}

// extremes are the values tried on each type of flag: each is nonsense
// for every flag of that type.
var extremes = map[string][]string{
	"int":      {"-9223372036854775808", "9223372036854775807", "-1000000"},
	"float":    {"NaN", "+Inf", "-Inf", "-1e308", "1e308"},
	"duration": {"NaN", "1e300", "-5s", "0", "9999999h"},
	"string":   {"1e17", "99999999999999999999", "-1", "NaN", "99999999TiB", "1,99999999999999999999k", "0x10", "+Inf"},
}

// baseArgs are what each command needs besides the flag tried, so that
// the flag is what gets checked.
var baseArgs = map[string][]string{
	"probe":     {"--base-url", "http://127.0.0.1:1"},
	"interfere": {"--base-url", "http://127.0.0.1:1"},
	"replay":    {"--base-url", "http://127.0.0.1:1"},
	"mesh":      {"--token", "t", "--launcher", "flags", "--coordinator", "127.0.0.1:1", "--world-size", "2", "--rank", "1"},
	"trace":     {"t.jsonl"},
	"plan":      {"t.jsonl", "--costs", "costs"},
	"report":    {"costs"},
	"plot":      {"costs"},
	"compare":   {"costs", "costs"},
}

// generatorFlags are the flags of kvtier trace --generate.
var generatorFlags = []string{"sessions", "turns", "shared-prompts", "system-prompt", "turn-tokens", "output-tokens", "think", "arrival-window"}

// allowed are the flags for which an extreme value is valid input.
var allowed = map[string]bool{
	"seed": true, // any uint64 seeds
}

// zeroAllowed are the durations whose help gives 0 a meaning ("0: back
// to back"): 0 is valid input there.
var zeroAllowed = map[string]bool{"think": true, "arrival-window": true, "duration": true, "slo-ttft": true, "slo-tpot": true}

// Every numeric flag of every command refuses values out of range,
// non-finite or nonsensical with one line naming the flag and exit
// status 2: no panic, no hang, nothing measured.
func TestAdversarialFlags(t *testing.T) {
	wd, _ := os.Getwd()
	dir := t.TempDir()
	if err := os.Symlink(wd+"/testdata", dir+"/testdata"); err != nil {
		t.Fatal(err)
	}
	os.Chdir(dir)
	t.Cleanup(func() { os.Chdir(wd) })
	mustRunCLI(t, "trace", "--generate", "t.jsonl", "--sessions", "4")
	os.Mkdir("costs", 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // whatever starts stops at once
	for _, c := range cli.Commands() {
		for name, typ := range flagsOf(t, c.Name) {
			if typ == "string" && !slices.Contains(numericStrings, name) || allowed[name] || extremes[typ] == nil {
				continue
			}
			for _, v := range extremes[typ] {
				if v == "0" && zeroAllowed[name] {
					continue
				}
				args := append(append([]string{c.Name}, baseArgs[c.Name]...), "--"+name+"="+v)
				if c.Name == "trace" && slices.Contains(generatorFlags, name) {
					args = []string{c.Name, "--" + name + "=" + v, "--generate", "g.jsonl"}
				}
				var stdout, stderr bytes.Buffer
				done := make(chan int, 1)
				go func() { done <- dispatch(ctx, &stdout, &stderr, args) }()
				select {
				case code := <-done:
					if code != exitUsage || !strings.Contains(stderr.String(), "--"+name) {
						t.Errorf("kvtier %s: exit %d, stderr %q", strings.Join(args, " "), code, firstLine(stderr.String()))
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("kvtier %s: still running after 20 s", strings.Join(args, " "))
				}
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 3 {
		t.Errorf("refused runs left %v behind", entries)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Adversarial model configs and calibration files are refused in one
// line, within a bound on what is read: a device that never ends, a
// file past the cap, counts that would build tables without bound.
func TestAdversarialConfigs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := write("huge.json", `{"num_hidden_layers": 2, "pad": "`+strings.Repeat("x", 5<<20)+`"}`)
	layers := write("layers.json", `{"num_hidden_layers": 2000000, "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 32}`)
	experts := write("experts.json", `{"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 32, "num_experts": 1e12, "num_experts_per_tok": 8}`)
	nan := write("nan.json", `{"num_hidden_layers": NaN}`)
	// A FIFO nobody writes to: opening it to read would wait forever.
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"geometry", "--model-config", "/dev/zero"}, "--model-config"},
		{[]string{"geometry", "--model-config", huge}, "larger than"},
		{[]string{"geometry", "--model-config", fifo}, "not a regular file"},
		{[]string{"sim", "--calibrate", fifo}, "not a regular file"},
		{[]string{"geometry", "--model-config", layers}, "num_hidden_layers"},
		{[]string{"geometry", "--model-config", experts}, "num_experts"},
		{[]string{"geometry", "--model-config", nan}, "--model-config"},
		{[]string{"sweep", "--model-config", layers, "--out", filepath.Join(dir, "out")}, "num_hidden_layers"},
		{[]string{"sim", "--calibrate", "/dev/zero"}, "--calibrate"},
		{[]string{"sim", "--calibrate", huge}, "--calibrate"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("kvtier %s: exit %d, stderr %q", strings.Join(tc.args, " "), code, stderr)
		}
	}
}

// A list flag's value given twice is refused up front, naming the flag
// and the value, rather than measured twice.
func TestAdversarialDuplicateListValues(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"probe", "--sim", "--tiers", "miss,miss"},
		{"probe", "--sim", "--prefix", "1k,1024"},
		{"interfere", "--sim", "--decode", "1,1"},
		{"sweep", "--backend", "host", "--tiers", "host,host"},
	} {
		out := filepath.Join(t.TempDir(), "run")
		code, _, stderr := runCLI(t, append(args, "--out", out)...)
		flag, value := args[len(args)-2], strings.Split(args[len(args)-1], ",")[1]
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, flag+": ") || !strings.Contains(stderr, `"`+value+`"`) {
			t.Errorf("kvtier %s: exit %d, stderr %q; want exit 2 and one line naming %s and %q", strings.Join(args, " "), code, stderr, flag, value)
		}
	}
}
