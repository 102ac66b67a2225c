package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cli"
)

// renames are the flags renamed so that one name has one meaning in
// every command (vllm bench serve's names where the concept is the
// same): each with a value its command refuses, and the start of the one
// line that refusal prints, which names the new flag. The old name is a
// deprecated alias: the same value, the same refusal, and a warning.
var renames = []struct {
	cmd      string
	base     []string // what the command needs besides the flag
	old, new string
	value    string
	want     string
}{
	{"probe", nil, "endpoint", "base-url", "ftp://x", "--base-url: "},
	{"interfere", nil, "endpoint", "base-url", "ftp://x", "--base-url: "},
	{"replay", nil, "endpoint", "base-url", "ftp://x", "--base-url: "},
	{"interfere", []string{"--base-url", "http://127.0.0.1:1"}, "control-endpoint", "control-base-url", "ftp://x", "--control-base-url: "},
	{"replay", []string{"--base-url", "http://127.0.0.1:1"}, "max-requests", "num-prompts", "-1", "--num-prompts: want 0 to"},
	{"knee", nil, "max-requests", "num-prompts", "-1", "--num-prompts: want 0 to"},
	{"replay", []string{"--base-url", "http://127.0.0.1:1"}, "concurrency", "max-concurrency", "-1", "--max-concurrency: want 0 to"},
	{"knee", nil, "concurrency", "max-concurrency", "-1", "--max-concurrency: want 0 to"},
	{"sim", nil, "max-requests", "limit-concurrency", "0", "--limit-concurrency: want 1 to"},
}

// TestRenamedFlags: each renamed flag takes its new name without a
// warning, and its old name as a deprecated alias of the same flag (the
// same value reaches the same check) that says to use the new one.
// Before, the new names were unknown flags.
func TestRenamedFlags(t *testing.T) {
	t.Parallel()
	for _, r := range renames {
		out := filepath.Join(t.TempDir(), "out")
		for _, name := range []string{r.new, r.old} {
			args := append(append([]string{r.cmd, "--out", out}, r.base...), "--"+name, r.value)
			if r.cmd == "sim" {
				args = slices.Delete(args, 1, 3)
			}
			code, _, stderr := runCLI(t, args...)
			warning := "Flag --" + r.old + " has been deprecated, use --" + r.new
			if code != exitUsage || !strings.Contains(stderr, "kvtier "+r.cmd+": "+r.want) {
				t.Errorf("kvtier %s: exit %d, stderr %q: want exit 2 and %q", strings.Join(args, " "), code, stderr, r.want)
			}
			if got := strings.Contains(stderr, warning); got != (name == r.old) {
				t.Errorf("kvtier %s: deprecation warning %v, stderr %q", strings.Join(args, " "), got, stderr)
			}
		}
	}
}

// TestAliasWithNewName: an old name given with the new one is refused,
// and --sim sees --base-url given under its old name.
func TestAliasWithNewName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--num-prompts", "1", "--max-requests", "2"}, "--num-prompts: given with --max-requests, its old name"},
		{[]string{"probe", "--sim", "--endpoint", "http://127.0.0.1:1"}, "--sim and --base-url exclude each other"},
		{[]string{"interfere", "--sim", "--endpoint", "http://127.0.0.1:1"}, "--sim and --base-url exclude each other"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("kvtier %s: exit %d, stderr %q: want %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// TestTierNames: the probe's --tiers names what it refuses with every
// name of the tiers it takes (harness/probe TestTierName: each name it
// takes; harness/sweep TestSweepTierAliases: the sweep's).
func TestTierNames(t *testing.T) {
	t.Parallel()
	if code, _, stderr := runCLI(t, "probe", "--sim", "--tiers", "hbm,disk"); code != exitUsage || !strings.Contains(stderr, `--tiers: unknown tier "disk" (the probe measures miss (recompute), gpu (hbm)`) {
		t.Errorf("probe --tiers hbm,disk: exit %d, stderr %q", code, stderr)
	}
}

// TestTierNamesParse: the probe's --tiers resolves the sweep's names and
// the sweep's the probe's, without measuring. Not parallel: it sets
// cli.ParseOnly.
func TestTierNamesParse(t *testing.T) {
	cli.ParseOnly = cli.StopAfterOptions
	defer func() { cli.ParseOnly = 0 }()
	for _, args := range [][]string{
		{"probe", "--sim", "--tiers", "recompute,hbm,host,remote", "--out", t.TempDir()},
		{"probe", "--sim", "--tiers", "miss,gpu,dram", "--out", t.TempDir()},
		{"sweep", "--tiers", "gpu,cpu,miss", "--out", t.TempDir()},
	} {
		if code, _, stderr := runCLI(t, args...); code != exitOK {
			t.Errorf("kvtier %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
	}
}

// TestDurationFlagsTyped: every flag that holds a duration is typed
// duration in -h, takes plain seconds and Go durations, and refuses a
// negative one as the flags parse. Before, --timeout, --inject-after,
// --duration, --slo-*, --health-timeout, --stop-grace, --budget and
// --rendezvous-timeout were strings.
func TestDurationFlagsTyped(t *testing.T) {
	t.Parallel()
	durations := map[string][]string{
		"probe":     {"timeout", "idle-timeout"},
		"interfere": {"timeout", "inject-after", "idle-timeout"},
		"replay":    {"timeout", "duration", "slo-ttft", "slo-tpot", "think", "arrival-window", "idle-timeout"},
		"knee":      {"timeout", "duration", "slo-ttft", "slo-tpot", "health-timeout", "stop-grace", "think", "arrival-window"},
		"trace":     {"think", "arrival-window"},
		"sim":       {"idle-timeout"},
		"sweep":     {"budget", "idle-timeout"},
		"transfer":  {"idle-timeout"},
		"mesh":      {"rendezvous-timeout"},
	}
	for cmd, names := range durations {
		types := flagsOf(t, cmd)
		for _, name := range names {
			if types[name] != "duration" {
				t.Errorf("kvtier %s --%s is typed %q, want duration", cmd, name, types[name])
			}
		}
	}
}

// TestTraceFlag: trace and plan take the trace as --trace, as replay and
// knee do, and still as an argument. Before, --trace was unknown there.
func TestTraceFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.jsonl")
	mustRunCLI(t, "trace", "--generate", tr, "--sessions", "2", "--turns", "2")
	for i, args := range [][]string{
		{"trace", "--trace", tr},
		{"trace", tr},
	} {
		out := filepath.Join(dir, "out", string(rune('a'+i)))
		stdout, _ := mustRunCLI(t, append(args, "--out", out)...)
		if !strings.Contains(stdout, filepath.Join(out, "trace.csv")) {
			t.Errorf("kvtier %s: stdout %q does not name trace.csv", strings.Join(args, " "), stdout)
		}
		if _, err := os.Stat(filepath.Join(out, "trace.csv")); err != nil {
			t.Error(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--trace", tr, tr, "--costs", dir}, "need exactly one trace file (kvtier plan --trace TRACE --costs DIR), got 2"},
		{[]string{"plan", "--costs", dir}, "got 0"},
		{[]string{"trace", "--generate", filepath.Join(dir, "g.jsonl"), "--trace", tr}, "--generate: writes a trace and takes no TRACE argument or --trace"},
		{[]string{"trace"}, "need at least one trace file"},
	} {
		if code, _, stderr := runCLI(t, tc.args...); code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("kvtier %s: exit %d, stderr %q: want %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// TestOutShorthandDeprecated: -o, which only report and bench2csv had,
// still works and warns; --out does not warn.
func TestOutShorthandDeprecated(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"report", "bench2csv"} {
		for _, flag := range []string{"-o", "--out"} {
			_, _, stderr := runCLI(t, cmd, flag, t.TempDir(), filepath.Join(t.TempDir(), "none"))
			if got := strings.Contains(stderr, "-o has been deprecated, use --out"); got != (flag == "-o") {
				t.Errorf("kvtier %s %s: deprecation warning %v, stderr %q", cmd, flag, got, stderr)
			}
		}
	}
}
