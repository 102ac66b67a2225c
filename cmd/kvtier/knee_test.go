package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtier/kvtier/harness/knee"
	"github.com/kvtier/kvtier/internal/syncbuf"
	"github.com/kvtier/kvtier/results"
)

// TestKneeSimHelper is kvtier itself when the test binary is run as
// "-test.run=^TestKneeSimHelper$ -- ARGS": the server command of the
// knee tests (kvtier sim without a built binary). Otherwise it skips.
func TestKneeSimHelper(t *testing.T) {
	args := flag.Args()
	if len(args) == 0 || args[0] != "sim" {
		t.Skip("a helper process for the knee tests")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(dispatch(ctx, os.Stdout, os.Stderr, args))
}

// simCommand is a --server-cmd running the test binary as kvtier sim at
// time scale scale; marker tags its processes.
func simCommand(scale float64, marker string) string {
	return fmt.Sprintf("%s -test.run=^TestKneeSimHelper$ -- sim --gpu-blocks {blocks} --max-model-len {tokens} --listen 127.0.0.1:{port} --time-scale %g --enable-prompt-tokens-details --engine-id %s",
		os.Args[0], scale, marker)
}

// processesWith returns the pids whose command line contains marker.
func processesWith(marker string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			if st, err := os.ReadFile(filepath.Join(d, "stat")); err == nil && !strings.Contains(string(st), ") Z ") {
				out = append(out, filepath.Base(d))
			}
		}
	}
	return out
}

func TestKneeBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--capacities", "1.2XB"}, []string{"--capacities"}},
		{[]string{"--capacities", "1.2GB", "--capacity-blocks", "5"}, []string{"--capacity-blocks: given with --capacities"}},
		{[]string{"--capacities", "100B"}, []string{"hold no block"}},
		{[]string{"--server-cmd", "vllm serve {oops} --port {port}"}, []string{"--server-cmd: unknown placeholder {oops}"}},
		{[]string{"--server-cmd", "vllm serve"}, []string{"--server-cmd: takes no {port}"}},
		{[]string{"--server-cmd", "vllm 'serve --port {port}"}, []string{"--server-cmd: unterminated ' quote"}},
		{[]string{"--health-timeout", "0"}, []string{`invalid argument "0" for "--health-timeout"`}},
		{[]string{"--stop-grace", "x"}, []string{`invalid argument "x" for "--stop-grace"`}},
		{[]string{"--dispatch", "later", "--block-size", "0"}, []string{"--dispatch", "--block-size"}},
	} {
		checkOneLine(t, "knee", append(tc.args, "--out", filepath.Join(dir, "out")), tc.want...)
	}
}

func TestKneeCommandEmbedded(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "k")
	stdout, _ := mustRunCLI(t, append([]string{"knee", "--capacity-blocks", "10,40", "--out", out}, smallSessions...)...)
	rows, _, err := results.ReadCSV(filepath.Join(out, "knee.csv"))
	if err != nil || len(rows) != 2 || rows[0].Get("simulated") != "true" || !(rows[0].Float("apc") < rows[1].Float("apc")) {
		t.Fatalf("%v, knee rows %v", err, rows)
	}
	for _, f := range []string{"knee_requests.csv", "knee_curve.csv", "knee_requests_summary.csv", "plots/knee_apc.png", "plots/knee_ttft.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, want := range []string{"| GPU KV (GB) | realized APC | TTFT p90 |", "**kvtier's simulator**", "Working set: 0.0 GB (240 tokens)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// TestKneeInterruptStopsServer interrupts a sweep of servers started
// through --server-cmd and checks none of their processes is left.
func TestKneeInterruptStopsServer(t *testing.T) {
	t.Parallel()
	marker := fmt.Sprintf("kneetest-%d", time.Now().UnixNano())
	out := filepath.Join(t.TempDir(), "k")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	rc := make(chan int, 1)
	go func() {
		rc <- dispatch(ctx, &stdout, &stderr, []string{"knee", "--capacity-blocks", "2000", "--server-cmd", simCommand(1, marker), "--out", out, "--stop-grace", "5s"})
	}()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(stderr.String(), "replaying"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the sweep did not start: %s", stderr.String())
		}
	}
	if len(processesWith(marker)) == 0 {
		t.Fatal("no server process found to stop")
	}
	cancel()
	select {
	case code := <-rc:
		if code != exitInterrupted {
			t.Errorf("exit %d after the interrupt, want %d", code, exitInterrupted)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("kvtier knee did not return after the interrupt")
	}
	if left := processesWith(marker); len(left) > 0 {
		t.Errorf("server processes %v outlived kvtier knee", left)
	}
	if logs, _ := filepath.Glob(filepath.Join(out, "server-0-2000blocks.log")); len(logs) != 1 {
		t.Errorf("no server log in %s", out)
	}
}

// TestKneeExternalSimShape runs the reference's knee sessions, with
// turns of 1k new and 256 output tokens (the same working set as the
// default's 640 and 640, and 40 % of its decode steps), against servers
// started as processes through --server-cmd (the test binary as kvtier
// sim, its modeled delays scaled by 0.1 so the sweep takes seconds) and
// checks the reference's shape. It is real time: a loaded
// machine delays the few slowest requests that make a p90, so it tries
// three times, and when every try failed while the simulator fell
// behind real time it skips rather than fails.
func TestKneeExternalSimShape(t *testing.T) {
	if raceDetector {
		t.Skip("real time: the race detector's slowed request handling would count as TTFT; make test runs this without it")
	}
	var problems []string
	laggedAll := true
	for try := range 3 {
		problem, lag := externalShape(t, try)
		if problem == "" {
			return
		}
		problems = append(problems, problem)
		laggedAll = laggedAll && lag > 0.02
	}
	if laggedAll {
		t.Skipf("the simulator fell behind real time in every try (a loaded machine): %s", strings.Join(problems, "; "))
	}
	t.Errorf("shape wrong in every try: %s", strings.Join(problems, "; "))
}

// externalShape runs the sweep once; it returns what is wrong with its
// shape ("" when nothing is) and the simulator's largest lag.
func externalShape(t *testing.T, try int) (string, float64) {
	marker := fmt.Sprintf("kneeshape-%d", time.Now().UnixNano())
	out := filepath.Join(t.TempDir(), "k")
	start := time.Now()
	stdout, _ := mustRunCLI(t, "knee", "--server-cmd", simCommand(0.1, marker), "--turn-tokens", "1k", "--output-tokens", "256", "--out", out)
	rows, _, err := results.ReadCSV(filepath.Join(out, "knee.csv"))
	if err != nil {
		t.Fatal(err)
	}
	// The server says it is kvtier's simulator: its rows say so too.
	if rows[0].Get("simulated") != "true" || rows[0].Get("server") != filepath.Base(os.Args[0]) || !strings.HasPrefix(rows[0].Get("server_log"), "server-0-") {
		t.Errorf("row %v", rows[0].Extra)
	}
	if left := processesWith(marker); len(left) > 0 {
		t.Errorf("server processes %v outlived kvtier knee", left)
	}
	lag := 0.0
	for _, r := range rows {
		lag = max(lag, r.Float("sim_lag_s"))
	}
	t.Logf("try %d took %v, simulator lag up to %.3f s:\n%s", try, time.Since(start), lag, stdout)
	k, err := knee.ShapeOfKnee(rows)
	if err != nil {
		t.Fatal(err)
	}
	if !(k.APCGain >= 2) || !(k.TTFTFall >= 5) || !(k.Flat <= 0.25) || k.WorkingSet < 0 || k.Knee-k.WorkingSet > 1 || k.WorkingSet-k.Knee > 1 {
		return fmt.Sprintf("APC gain %.2f× (want ≥ 2), TTFT p90 fall %.2f× (≥ 5), flat within ±%.0f %% (≤ 25), knee at capacity %d, working set nearest %d (one step at most)",
			k.APCGain, k.TTFTFall, 100*k.Flat, k.Knee, k.WorkingSet), lag
	}
	return "", lag
}
