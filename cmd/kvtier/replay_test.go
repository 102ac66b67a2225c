package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/vllmsim/simtest"
)

// smallSessions are generator flags of a workload small enough for a
// real-time test: 2 sessions of 2 turns, prompts under 200 tokens.
var smallSessions = []string{"--sessions", "2", "--turns", "2", "--shared-prompts", "0", "--system-prompt", "64", "--turn-tokens", "32", "--output-tokens", "4"}

// realtimeSim starts an in-process simulator on a socket, 100× faster
// than real time.
func realtimeSim(t *testing.T) string {
	t.Helper()
	_, url := simtest.Start(t, vllmsim.Config{GPUBlocks: 512, TimeScale: 0.01, EnablePromptTokensDetails: true})
	return url
}

// checkOneLine checks a bad-input exit: status 2, one line on stderr
// naming the command and every flag in want, nothing on stdout.
func checkOneLine(t *testing.T, cmd string, args []string, want ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := dispatch(context.Background(), &stdout, &stderr, append([]string{cmd}, args...))
	if code != exitUsage || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.HasPrefix(stderr.String(), "kvtier "+cmd+": ") {
		t.Errorf("%v: exit %d, stdout %q, stderr %q: want exit 2 and one line", args, code, stdout.String(), stderr.String())
	}
	for _, w := range want {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("%v: stderr %q does not name %s", args, stderr.String(), w)
		}
	}
}

func TestReplayBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.jsonl")
	os.WriteFile(tr, []byte(`{"chat_id":1,"timestamp":0,"input_length":100,"output_length":3,"hash_ids":[1]}`+"\n"), 0o644)
	url := realtimeSim(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--base-url", url, "--dispatch", "nope"}, []string{"--dispatch"}},
		{[]string{"--base-url", url, "--speedup", "0", "--max-output", "lots", "--num-prompts", "-1"}, []string{"--speedup", "--max-output", "--num-prompts"}},
		{[]string{"--base-url", url, "--timeout", "soon"}, []string{`invalid argument "soon" for "--timeout"`}},
		{[]string{"--base-url", url, "--slo-ttft", "-1s"}, []string{`invalid argument "-1s" for "--slo-ttft"`}},
		{[]string{"--base-url", url, "--trace", filepath.Join(dir, "none.jsonl")}, []string{"--trace"}},
		{[]string{"--base-url", url, "--trace", tr, "--sessions", "3"}, []string{"--sessions: shapes synthetic sessions"}},
		{[]string{"--base-url", "ftp://x"}, []string{"--base-url"}},
		{[]string{"--base-url", ""}, []string{"--base-url: required"}},
		{[]string{"--base-url", url, "--turns", "0"}, []string{"--turns"}},
		{[]string{"--base-url", url, "--trace", tr, "--trace-block", "24"}, []string{"not a whole number of the server's 16-token blocks"}},
		{[]string{"--base-url", "http://127.0.0.1:1"}, []string{"endpoint unreachable"}},
	} {
		checkOneLine(t, "replay", append(tc.args, "--out", filepath.Join(dir, "out")), tc.want...)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("bad input left a results directory")
	}
}

func TestReplayCommand(t *testing.T) {
	t.Parallel()
	url := realtimeSim(t)
	out := filepath.Join(t.TempDir(), "r")
	stdout, _ := mustRunCLI(t, append([]string{"replay", "--base-url", url, "--out", out, "--slo-ttft", "10s"}, smallSessions...)...)
	reqs, _, err := results.ReadCSV(filepath.Join(out, "replay.csv"))
	if err != nil || len(reqs) != 4 {
		t.Fatalf("%v, %d request rows", err, len(reqs))
	}
	runs, _, err := results.ReadCSV(filepath.Join(out, "replay_run.csv"))
	if err != nil || len(runs) != 1 {
		t.Fatalf("%v, %d run rows", err, len(runs))
	}
	r := runs[0]
	// Turn 2 of each session reuses turn 1's full blocks: realized and
	// predicted APC agree and are neither 0 nor 1.
	if apc, pred := r.Float("apc"), r.Float("predicted_apc"); !(apc > 0.2 && apc < 0.9) || apc != pred || r.Get("simulated") != "true" || r.Get("goodput_rps") == "" {
		t.Errorf("run row: apc %g predicted %g simulated %s goodput %s", apc, pred, r.Get("simulated"), r.Get("goodput_rps"))
	}
	for _, want := range []string{"Replayed against **kvtier's simulator**", "| realized APC | external APC | predicted APC |", "4 ok"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// replay --sim replays against an embedded sim, as probe and interfere
// measure one, and says so in its rows; beside --base-url it is bad
// input.
func TestReplaySim(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r")
	mustRunCLI(t, append([]string{"replay", "--sim", "--think", "0", "--out", out}, smallSessions...)...)
	for _, file := range []string{"replay.csv", "replay_run.csv"} {
		rows, _, err := results.ReadCSV(filepath.Join(out, file))
		if err != nil || len(rows) == 0 {
			t.Fatalf("%s: %v, %d rows", file, err, len(rows))
		}
		for _, r := range rows {
			if r.Get(results.ColSimulated) != "true" || r.Status != results.StatusOK {
				t.Errorf("%s: %s %q, simulated %q", file, r.Status, r.Reason, r.Get(results.ColSimulated))
			}
		}
	}
	checkOneLine(t, "replay", []string{"--sim", "--base-url", "http://127.0.0.1:1", "--out", filepath.Join(out, "x")}, "--sim and --base-url exclude each other")
}
