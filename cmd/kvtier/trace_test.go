package main

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/harness/trace"
	"github.com/kvtier/kvtier/results"
)

// genTrace writes a small synthetic trace and returns its path and the
// number of requests.
func genTrace(t *testing.T, dir string) (string, int) {
	t.Helper()
	path := filepath.Join(dir, "gen.jsonl")
	code, stdout, stderr := runCLI(t, "trace", "--generate", path, "--sessions", "30", "--turns", "3", "--seed", "2", "--system-prompt", "1k", "--turn-tokens", "600")
	if code != exitOK || strings.TrimSpace(stdout) != path {
		t.Fatalf("generate: exit %d\n%s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, strings.Count(string(data), "\n")
}

func metricRow(t *testing.T, rows []results.Row, metric string) results.Row {
	t.Helper()
	for _, r := range rows {
		if r.Get("metric") == metric {
			return r
		}
	}
	t.Fatalf("no %s row", metric)
	return results.Row{}
}

func TestTraceCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, n := genTrace(t, dir)
	out := filepath.Join(dir, "run")
	stdout, _ := mustRunCLI(t, "trace", path, "--instances", "2", "--route", "session", "--window", "30s", "--out", out)
	for _, f := range []string{"trace.csv", "trace_curve.csv", "trace_windows.csv", "manifest.json", "plots/trace_hitratio.png", "plots/trace_workingset.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	for _, want := range []string{"#### Trace `gen.jsonl`", "APC ceiling with an infinite cache", "exact analysis", "| 2 | session |"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	rows, _, err := results.ReadCSV(filepath.Join(out, trace.File))
	if err != nil {
		t.Fatal(err)
	}
	if got := metricRow(t, rows, "requests").Get("value"); got != strconv.Itoa(n) {
		t.Errorf("requests %s, want %d", got, n)
	}
	if r := metricRow(t, rows, "knee95"); r.Status != results.StatusOK || r.Bytes <= 0 || r.Get("predicted") != "true" || r.Backend != "trace" {
		t.Errorf("knee row %+v", r)
	}
	// Sampled: the method and its bound are said in the rows and output.
	out2 := filepath.Join(dir, "sampled")
	code, stdout, stderr := runCLI(t, "trace", path, "--sample", "0.5", "--knees", "90,99.9", "--out", out2)
	if code != exitOK || !strings.Contains(stdout, "SHARDS sampling") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	rows, _, _ = results.ReadCSV(filepath.Join(out2, trace.File))
	if r := metricRow(t, rows, "apc_ceiling_any"); r.Get("method") != "shards" || r.Get("sample_rate") != "0.5" || r.Get("error_pp") == "" {
		t.Errorf("sampled row %+v", r.Extra)
	}
	if !strings.Contains(stdout, "| knee 90 % | tokens | knee 99.9 % |") || metricRow(t, rows, "knee99.9").Status != results.StatusOK {
		t.Errorf("--knees 90,99.9: no knee 99.9 %% in the table or trace.csv:\n%s", stdout)
	}
}

func TestTraceBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, _ := genTrace(t, dir)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("nope\n{\"timestamp\": 1}\n"), 0o644)
	unsorted := filepath.Join(dir, "unsorted.jsonl")
	os.WriteFile(unsorted, []byte(`{"timestamp":5,"input_length":10,"hash_ids":[1]}
{"timestamp":6,"input_length":10,"hash_ids":[1]}
{"timestamp":7,"input_length":10,"hash_ids":[1]}
{"timestamp":1,"input_length":10,"hash_ids":[1]}
`), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no trace", nil, "need at least one trace file"},
		{"missing file", []string{filepath.Join(dir, "none.jsonl")}, "no such file"},
		{"nothing usable", []string{bad}, "no usable request (2 lines; 2 malformed line(s): line 1: not a JSON object"},
		{"out of order", []string{unsorted, "--reorder", "1"}, "line 4: timestamp 0.001 s is earlier"},
		{"bad sample", []string{path, "--sample", "2"}, "--sample: 2: must be in (0, 1]"},
		{"sample 0", []string{path, "--sample", "0"}, "--sample: 0: must be in (0, 1]"},
		{"bad route", []string{path, "--route", "nope", "--instances", "0"}, `--route: "nope"`},
		{"bad window", []string{path, "--window", "60s,,"}, "--window"},
		{"generate with a trace", []string{path, "--generate", filepath.Join(dir, "x")}, "takes no TRACE argument"},
		{"generate, bad tokens", []string{"--generate", filepath.Join(dir, "x"), "--turn-tokens", "lots", "--sessions", "0"}, `--turn-tokens: "lots" is not a token count (want e.g. 1024, 8k, 64Ki); --sessions: want 1 to 4194304, got 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "run")
			code, _, stderr := runCLI(t, append([]string{"trace", "--out", out}, tc.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q, want one line with %q", code, stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("bad input created the results directory")
			}
		})
	}
}

func TestPlanCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, _ := genTrace(t, dir)
	sweep := filepath.Join(dir, "sweep")
	mustRunCLI(t, "sweep", "--backend", "host", "--tiers", "host,hbm,recompute", "--layout", "layerwise", "--copy", "percopy",
		"--prefix", "16,64,256", "--reps", "2", "--warmup", "1", "--budget", "2s", "--out", sweep)
	out := filepath.Join(dir, "plan")
	stdout, stderr := mustRunCLI(t, "plan", path, "--costs", sweep, "--hbm", "1.45GiB,4GiB", "--dram", "0,16GiB", "--out", out)
	if !strings.Contains(stderr, "--hbm 1.45 GiB is not a whole number of 48 MiB blocks: rounded down to 30 blocks, 1.41 GiB") {
		t.Errorf("stderr does not say how --hbm 1.45GiB was rounded:\n%s", stderr)
	}
	// With --costs nothing is replayed: the progress line said "checking".
	if !regexp.MustCompile(`\] not checking \d+ configurations: no server or simulator`).MatchString(stderr) || strings.Contains(stderr, "] checking") {
		t.Errorf("stderr does not say the self-check has nothing to replay against:\n%s", stderr)
	}
	for _, want := range []string{"**host stand-in**", "Missing tier costs: hbm, disk, remote, recompute", "not predicted: no measured cost for hbm, recompute",
		"one cache reaches 50 % of it at"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"plan.csv", "plan_costs.csv", "trace.csv", "trace_curve.csv", "plots/plan_ttft_p90.png", "plots/trace_hitratio.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	rows, _, err := results.ReadCSV(filepath.Join(out, trace.PlanFile))
	rows = slices.DeleteFunc(rows, func(r results.Row) bool { return r.Get(trace.ColRole) != trace.RoleGrid })
	if err != nil || len(rows) != 4 {
		t.Fatalf("%d plan rows, %v", len(rows), err)
	}
	for _, r := range rows {
		if r.Get("cost_source") != "host stand-in" || r.Get("predicted") != "true" || r.Get("ttft_p90_s") != "" || !strings.Contains(r.Get("missing"), "recompute") {
			t.Errorf("plan row %+v", r.Extra)
		}
		if r.Get("dram_bytes") != "0" && r.Get("load_p90_s") == "" {
			t.Errorf("dram configuration without a predicted load: %+v", r.Extra)
		}
	}
	checkPlanSim(t, path, filepath.Join(dir, "simplan"))
	code, _, stderr := runCLI(t, "plan", path, "--costs", sweep, "--model", "llama-3.1-8b", "--out", filepath.Join(dir, "x"))
	if code != exitUsage || !strings.Contains(stderr, "were measured for qwen3-coder-30b-a3b") {
		t.Errorf("model mismatch: exit %d %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "plan", path, "--costs", dir, "--hbm", "0,-1", "--out", filepath.Join(dir, "y"))
	if code != exitUsage || !strings.Contains(stderr, "--costs") || !strings.Contains(stderr, "--hbm") {
		t.Errorf("bad costs and hbm: exit %d %s", code, stderr)
	}
}

// checkPlanSim runs plan --sim on the trace at path: its costs are
// measured against kvtier sim on its virtual clock and say so; the
// answer gives DRAM's 90 % knee with TTFT with and without it; the
// self-check's realized hit and TTFT lie near the prediction (hits
// within 10 points: at 1 GiB the trace evicts much, and the simulator
// frees 16-token blocks tail first where the plan's LRU model touches
// 512-token blocks forward).
func checkPlanSim(t *testing.T, path, out string) {
	t.Helper()
	stdout, stderr := mustRunCLI(t, "plan", path, "--sim", "--hbm", "1GiB", "--dram", "0,16GiB", "--out", out)
	for _, want := range []string{"costs: measured against kvtier sim on its virtual clock", "[2/4] measuring costs", "[4/4] checking 2 configurations"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("plan --sim: stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, want := range []string{"**simulated**", "90.0 % of the achievable prefix hit ratio", "beside HBM 1 GiB: DRAM", "TTFT p90", "without", "Self-check: all "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan --sim: stdout lacks %q:\n%s", want, stdout)
		}
	}
	rows, _, err := results.ReadCSV(filepath.Join(out, trace.PlanFile))
	if err != nil || len(rows) < 2 || rows[0].Get("cost_source") != "simulated" || rows[0].Get("costs") != trace.SimCostsLabel || rows[0].Get("ttft_p90_s") == "" {
		t.Fatalf("plan --sim rows %v (%v)", rows, err)
	}
	mustRunCLI(t, "report", out)
	if md, err := os.ReadFile(filepath.Join(out, "REPORT.md")); err != nil || !strings.Contains(string(md), "TTFT** (simulated, predicted; [details](#plan-tier-capacities-and-predicted-ttft)): 90.0 % of the achievable prefix hit ratio") ||
		!strings.Contains(string(md), "Self-check on all ") {
		t.Errorf("REPORT.md's headline does not answer the capacity question (%v):\n%s", err, md)
	}
	checks, _, err := results.ReadCSV(filepath.Join(out, trace.PlanCheckFile))
	if err != nil || len(checks) != 2 {
		t.Fatalf("plan_check.csv: %d rows (%v)", len(checks), err)
	}
	for _, r := range checks {
		ph, rh := r.Float(trace.ColPredictedHit), r.Float(trace.ColRealizedHit)
		pt, rt := r.Float(trace.ColPredictedP90), r.Float("ttft_p90_s")
		if r.Status != results.StatusOK || math.Abs(ph-rh) > 0.1 || math.Abs(rt/pt-1) > 0.25 {
			t.Errorf("check %s dram %s: %s %s: hit %.3f predicted, %.3f realized; TTFT p90 %.3f predicted, %.3f realized",
				r.Get(trace.ColRole), r.Get("dram_bytes"), r.Status, r.Reason, ph, rh, pt, rt)
		}
	}
}

// TestPlanSources: the costs come from exactly one of --sim, --base-url
// and --costs, each conflict one line.
func TestPlanSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, _ := genTrace(t, dir)
	url := "http://127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sim", "--costs", dir}, "--sim and --costs exclude each other"},
		{[]string{"--sim", "--base-url", url}, "--sim and --base-url exclude each other"},
		{[]string{"--base-url", url, "--costs", dir}, "--base-url and --costs exclude each other"},
		{nil, "--costs: a results directory is required (or --sim, or --base-url URL)"},
	} {
		code, _, stderr := runCLI(t, append([]string{"plan", path, "--out", filepath.Join(dir, "x")}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestPlanQuickStartRefusesTTFT: the README's quick start probes one
// prefix length (32k; here its rows, written by hand); a plan from it
// predicts no TTFT and its report's headline says why and what to run,
// instead of recommending no offload at a 108 ms p90 beside a 4.60 s
// miss.
func TestPlanQuickStartRefusesTTFT(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, _ := genTrace(t, dir)
	costs := filepath.Join(dir, "probe")
	if err := os.MkdirAll(costs, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := results.CreateCSV(filepath.Join(costs, probe.File), "ttft_s", "verified", "simulated")
	if err != nil {
		t.Fatal(err)
	}
	for tier, ttft := range map[string]float64{"miss": 4.6, "gpu": 0.106, "cpu": 0.186} {
		for rep := range 3 {
			r := results.NewRow("probe")
			r.Tier, r.PrefixTokens, r.Rep, r.Status, r.Model = tier, 32768, rep, results.StatusOK, "qwen3-coder-30b-a3b"
			r.SetTime(ttft)
			r.Set("ttft_s", ttft)
			r.Set("verified", true)
			r.Set("simulated", true)
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "plan")
	mustRunCLI(t, "plan", path, "--costs", costs, "--hbm", "80GiB", "--dram", "0,512GiB", "--out", out)
	mustRunCLI(t, "report", out)
	md, err := os.ReadFile(filepath.Join(out, "REPORT.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TTFT not predicted (no usable cost for", "measured at one prefix length only (32k)", "kvtier plan --sim"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("REPORT.md lacks %q", want)
		}
	}
}
