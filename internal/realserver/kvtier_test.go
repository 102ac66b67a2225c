//go:build servers

package realserver

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A kvtierRun is what one kvtier command did.
type kvtierRun struct {
	out    string // its --out directory
	code   int    // exit status (-1: killed at its time limit)
	output string // stdout and stderr
	took   time.Duration
}

// runKvtier runs kvtier with args (and --out) within limit, in a process
// group of its own that is killed at the limit, carrying mark.
func runKvtier(t *testing.T, mark, out string, limit time.Duration, args ...string) kvtierRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, *kvtierBin, append(args, "--out", out)...)
	cmd.Env = append(os.Environ(), markerVar+"="+mark)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	err := cmd.Run()
	r := kvtierRun{out: out, output: buf.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.code = -1
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("kvtier %s: %v", args[0], err)
	}
	t.Logf("kvtier %s: exit %d after %v\n%s", strings.Join(args, " "), r.code, r.took.Round(time.Millisecond), r.output)
	return r
}

// readRows reads a kvtier CSV as one map per row, column to value.
func readRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) == 0 {
		t.Fatalf("%s: empty", path)
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, col := range recs[0] {
			row[col] = rec[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// num is a row's numeric value of col, or NaN-free -1 when absent.
func num(row map[string]string, col string) float64 {
	v, err := strconv.ParseFloat(row[col], 64)
	if err != nil {
		return -1
	}
	return v
}

// median of xs (0 when empty).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// notOK lists the rows whose status is not ok, for a failure message.
func notOK(rows []map[string]string) []string {
	var bad []string
	for _, r := range rows {
		if r["status"] != "ok" {
			bad = append(bad, r["status"]+": "+r["reason"])
		}
	}
	return bad
}

// TestKvtierAgainstOllama runs kvtier's HTTP suites, with default flags
// but for the sizes named here, against one server of each engine:
// probe, interfere (MB1) and replay must measure it end to end.
func TestKvtierAgainstOllama(t *testing.T) {
	forEngines(t, func(t *testing.T, e engine) {
		dir := workDir(t)
		o := startOllama(t, e, dir)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := o.complete(ctx, "warm up", 1); err != nil { // loads the model
			t.Fatalf("warm-up: %v", err)
		}
		t.Run("probe", func(t *testing.T) { checkProbe(t, o, filepath.Join(dir, "probe")) })
		t.Run("interfere", func(t *testing.T) { checkInterfere(t, o, filepath.Join(dir, "interfere")) })
		t.Run("replay", func(t *testing.T) { checkReplay(t, o, filepath.Join(dir, "replay")) })
	})
}

// checkProbe: every miss and gpu row at 1k and 4k is ok and verified
// by the server's log (--server-log; Ollama reports no cached tokens
// otherwise) with the count its cache line gives, a miss grows with L,
// and the repeated prefix answers at least 5x faster.
func checkProbe(t *testing.T, o *ollama, out string) {
	r := runKvtier(t, o.mark, out, 2*time.Minute,
		"probe", "--base-url", o.url, "--tiers", "miss,gpu", "--prefix", "1k,4k", "--reps", "2", "--timeout", "60s", "--server-log", o.log)
	if r.code != 0 {
		t.Fatalf("kvtier probe: exit %d", r.code)
	}
	rows := readRows(t, filepath.Join(out, "probe.csv"))
	if bad := notOK(rows); len(bad) > 0 {
		t.Fatalf("%d probe rows not ok: %v", len(bad), bad)
	}
	checkFamily(t, rows, "probe")
	for _, row := range rows {
		// A miss shares BOS and a letter or two with earlier prompts (Ollama
		// reuses token by token); a hit all but the last token.
		cached, l := num(row, "cached_tokens"), num(row, "prompt_tokens")
		bad := map[string]bool{"miss": cached < 0 || cached > l/10, "gpu": cached != l-1}[row["tier"]]
		if row["verified"] != "true" || row["verified_by"] != "server_log" || bad {
			t.Errorf("%s %s tokens: verified %s by %q, cached %s of %s: %s", row["tier"], row["prefix_tokens"], row["verified"], row["verified_by"], row["cached_tokens"], row["prompt_tokens"], row["verify_reason"])
		}
	}
	if m, _ := os.ReadFile(filepath.Join(out, "manifest.json")); !strings.Contains(string(m), "server_family") || strings.Contains(string(m), "vLLM release") {
		t.Errorf("probe's manifest names no server family, or warns of a vLLM release: %s", m)
	}
	ttft := map[string][]float64{}
	for _, row := range rows {
		k := row["tier"] + "/" + row["prefix_tokens"]
		ttft[k] = append(ttft[k], num(row, "ttft_s"))
	}
	miss1, miss4, gpu4 := median(ttft["miss/1024"]), median(ttft["miss/4096"]), median(ttft["gpu/4096"])
	t.Logf("median TTFT: miss 1k %.4f s, miss 4k %.4f s, gpu 4k %.4f s", miss1, miss4, gpu4)
	if len(ttft["miss/1024"]) == 0 || len(ttft["miss/4096"]) == 0 || len(ttft["gpu/4096"]) == 0 {
		t.Fatalf("probe rows for miss and gpu at 1k and 4k missing: %v", ttft)
	}
	if miss4 <= miss1 {
		t.Errorf("a 4k miss (%.4f s) is no slower than a 1k miss (%.4f s)", miss4, miss1)
	}
	if miss4 < 5*gpu4 {
		t.Errorf("a repeated 4k prefix (%.4f s) is not 5x faster than its miss (%.4f s)", gpu4, miss4)
	}
}

// checkFamily: every row of a suite names the server family, ollama.
func checkFamily(t *testing.T, rows []map[string]string, suite string) {
	t.Helper()
	for _, row := range rows {
		if row["server_family"] != "ollama" {
			t.Errorf("%s row: server_family %q, want ollama", suite, row["server_family"])
			return
		}
	}
}

// checkInterfere: MB1 with D=1 and D at Ollama's default slot count
// (2), other flags at their defaults, ends within 3 minutes: D=1's rows
// are ok with their figures; D=2's decodes fill both slots, so its
// prefill waits, and kvtier must refuse that cell (an error row saying
// the prefill was not admitted, its baseline and later reps skipped),
// in seconds rather than after the decodes' 8k tokens, with exit 1.
func checkInterfere(t *testing.T, o *ollama, out string) {
	r := runKvtier(t, o.mark, out, 3*time.Minute,
		"interfere", "--base-url", o.url, "--decode", "1,"+strconv.Itoa(defaultParallel), "--prefill", "2k", "--reps", "2")
	if r.code == -1 {
		t.Fatalf("kvtier interfere ran past 3 minutes")
	}
	rows := readRows(t, filepath.Join(out, "mb1.csv"))
	if len(rows) != 8 {
		t.Fatalf("%d mb1 rows, want an interfere and a baseline arm per D and rep", len(rows))
	}
	checkFamily(t, rows, "interfere")
	for _, row := range rows {
		switch {
		case row["decode_streams"] == "1" && row["status"] != "ok":
			t.Errorf("D=1 %s arm: %s: %s", row["arm"], row["status"], row["reason"])
		case row["decode_streams"] == "1":
			if row["arm"] == "interfere" {
				checkInterfereRow(t, row)
			}
		case row["arm"] == "interfere" && row["rep"] == "0":
			if row["status"] != "error" || !strings.Contains(row["reason"], "not admitted") {
				t.Errorf("D=2 rep 0: %s: %s, want refused as not admitted", row["status"], row["reason"])
			}
		case row["status"] != "skipped":
			t.Errorf("D=2 %s arm rep %s: %s: %s, want skipped", row["arm"], row["rep"], row["status"], row["reason"])
		}
	}
	if r.code != 1 {
		t.Errorf("kvtier interfere: exit %d, want 1 (D=2's error row)", r.code)
	}
}

// checkInterfereRow: an ok interfere arm has its figures: tokens counted
// before the prefill (a base TPOT), a prefill TTFT, and a penalty,
// measured from tokens during the prefill or marked as a lower bound.
func checkInterfereRow(t *testing.T, row map[string]string) {
	t.Helper()
	d := num(row, "decode_streams")
	if num(row, "tokens_during") < 1 && row["penalty_bound"] != "lower" {
		t.Errorf("D=%v: no tokens during the prefill (%s) and no lower bound", d, row["token_counting"])
	}
	if tpot := num(row, "base_tpot_s"); tpot <= 0 {
		t.Errorf("D=%v: base TPOT %q: no tokens counted before the prefill", d, row["base_tpot_s"])
	}
	if p := num(row, "prefill_ttft_s"); p <= 0 {
		t.Errorf("D=%v: prefill TTFT %q", d, row["prefill_ttft_s"])
	}
	if p := num(row, "penalty"); p <= 0 {
		t.Errorf("D=%v: penalty %q", d, row["penalty"])
	}
}

// checkReplay: two closed-loop sessions of three turns each are ok, and
// the server's prompt cache realizes their shared prefixes: later turns,
// which repeat all of the turn before, answer several times faster than
// first turns (misses of the same length), and a realized APC, where
// kvtier reports one, is above zero.
func checkReplay(t *testing.T, o *ollama, out string) {
	r := runKvtier(t, o.mark, out, 60*time.Second,
		"replay", "--base-url", o.url, "--sessions", "2", "--turns", "3", "--system-prompt", "2k",
		"--turn-tokens", "128", "--output-tokens", "16", "--timeout", "60s", "--server-log", o.log)
	if r.code != 0 {
		t.Fatalf("kvtier replay: exit %d", r.code)
	}
	rows := readRows(t, filepath.Join(out, "replay.csv"))
	if bad := notOK(rows); len(bad) > 0 || len(rows) != 6 {
		t.Fatalf("%d replay rows, not ok: %v", len(rows), bad)
	}
	checkFamily(t, rows, "replay")
	var first, later []float64
	verified := 0
	for _, row := range rows {
		if row["turn"] == "1" {
			first = append(first, num(row, "ttft_s"))
			continue
		}
		later = append(later, num(row, "ttft_s"))
		// A later turn repeats all of the one before: its log line
		// counts most of its prompt cached. The two sessions' turns
		// have one length: sent together, their log lines cannot be
		// told apart, and kvtier says so rather than guess.
		switch {
		case row["cached_source"] == "server_log" && num(row, "cached_tokens") >= num(row, "prompt_tokens")/2:
			verified++
		case row["cached_source"] == "" && strings.Contains(row["reason"], "concurrent requests of one length"):
		default:
			t.Errorf("session %s turn %s: cached %s of %s from %q (%s)", row["session"], row["turn"], row["cached_tokens"], row["prompt_tokens"], row["cached_source"], row["reason"])
		}
	}
	if verified == 0 {
		t.Errorf("no later turn verified by the server log")
	}
	t.Logf("median TTFT: first turns %.4f s, later turns %.4f s", median(first), median(later))
	if median(later)*3 > median(first) {
		t.Errorf("later turns (%.4f s) are not 3x faster than first turns (%.4f s): no prefix reuse", median(later), median(first))
	}
	run := readRows(t, filepath.Join(out, "replay_run.csv"))
	if len(run) != 1 {
		t.Fatalf("%d replay_run rows, want 1", len(run))
	}
	if apc := run[0]["apc"]; apc != "" && num(run[0], "apc") <= 0 {
		t.Errorf("realized APC %s, want above zero", apc)
	}
	if share := num(run[0], "cached_share"); share <= 0.3 {
		t.Errorf("cached share %s (from the server log), want most later-turn prompts", run[0]["cached_share"])
	}
}

// TestKneeRefusesOllama: Ollama's context length limits one request, not
// a KV pool shared by all, so there is no capacity to sweep; knee must
// say so at start, measure nothing, and leave no server running.
func TestKneeRefusesOllama(t *testing.T) {
	forEngines(t, checkKnee)
}

func checkKnee(t *testing.T, e engine) {
	dir := workDir(t)
	o := startOllama(t, e, dir) // registers the model in dir/models
	o.stop(t)
	mark := newMark(t)
	cmd := append([]string{"env"}, e.env(dir, "127.0.0.1:{port}", mark)...)
	cmd = append(cmd, e.bin, "serve")
	out := filepath.Join(dir, "knee")
	r := runKvtier(t, mark, out, 45*time.Second,
		"knee", "--server-cmd", strings.Join(cmd, " "), "--capacity-blocks", "64,128",
		"--sessions", "1", "--turns", "2", "--system-prompt", "256", "--turn-tokens", "64",
		"--output-tokens", "4", "--health-timeout", "30s", "--stop-grace", "5s")
	checkNoneLeft(t, mark)
	if r.code == -1 {
		t.Fatalf("kvtier knee ran past 45 s against Ollama")
	}
	low := strings.ToLower(r.output)
	if !strings.Contains(low, "ollama") || !strings.Contains(low, "kv") {
		t.Errorf("knee's output does not say that Ollama has no KV pool to size")
	}
	rows := readRows(t, filepath.Join(out, "knee.csv"))
	if len(rows) != 2 {
		t.Errorf("%d knee rows, want one per capacity (2)", len(rows))
	}
	checkFamily(t, rows, "knee")
	for _, row := range rows {
		if row["status"] != "skipped" || !strings.Contains(strings.ToLower(row["reason"]), "ollama") {
			t.Errorf("capacity %s blocks: %s (%s), want skipped naming Ollama", row["gpu_blocks"], row["status"], row["reason"])
		}
	}
}
