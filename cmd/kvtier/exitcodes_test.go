package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtier/kvtier/internal/syncbuf"
	"github.com/kvtier/kvtier/results"
)

// An exitCase drives one command into one status of the exit-code table
// (README "Exit status"), as a process of its own.
type exitCase struct {
	name string
	args []string // kvtier's arguments; OUT is replaced by a fresh directory, SRV by the server's URL
	env  []string
	// disk runs the command with OUT on a disk of that many bytes that
	// fills mid-run, or (full) one with no room left: a write fails.
	disk int
	// interruptAt, when set, sends SIGINT (SIGTERM with term) once this
	// file under OUT holds a row, or once stdout holds this text when it
	// starts with "stdout:".
	interruptAt string
	term        bool
	want        int
	// keeps, when set, is a file under OUT that must hold a row noting
	// the interruption afterwards (a run summary of the rows so far).
	keeps string
}

// exitCases are every measuring and analysing command in each status it
// can reach; mesh's are in mesh_test.go (0, 2) and the meshcluster
// package (a rank killed: 1).
func exitCases(costs string) []exitCase {
	tiny := []string{"--model-config", "testdata/tiny_config.json"}
	sweep := append([]string{"sweep", "--backend", "host", "--tiers", "host", "--layout", "blockwise", "--copy", "percopy", "--prefix", "16"}, tiny...)
	sweep = slices.Clip(sweep)
	transfer := []string{"transfer", "--sizes", "64KiB", "--layout", "contiguous", "--warmup", "0"}
	probe := []string{"probe", "--sim", "--tiers", "miss", "--prefix", "64"}
	interfere := []string{"interfere", "--sim", "--decode", "1", "--prefill", "64", "--inject-after", "0.3s", "--reps", "1"}
	const full = -1
	replaySmall := append([]string{"replay", "--base-url", "SIM"}, smallSessions...)
	many := []string{"--reps", "100000", "--warmup", "0", "--budget", "600s"}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	return []exitCase{
		{name: "sweep ok", args: with(sweep, "--reps", "2", "--out", "OUT"), want: exitOK},
		{name: "sweep full disk", args: with(sweep, "--reps", "100000", "--budget", "60s", "--out", "OUT"), disk: 48 << 10, want: exitFail},
		{name: "sweep bad input", args: with(sweep, "--reps", "0", "--out", "OUT"), want: exitUsage},
		{name: "sweep interrupted", args: with(with(sweep, many...), "--out", "OUT"), interruptAt: "sweep.csv", want: exitInterrupted},
		{name: "transfer ok", args: with(transfer, "--reps", "2", "--out", "OUT"), want: exitOK},
		{name: "transfer error rows", args: with(transfer, "--reps", "2", "--out", "OUT"), env: []string{"KVTIER_TEST_OUT_OF_POOL=1"}, want: exitFail},
		{name: "transfer full disk", args: with(transfer, "--reps", "100000", "--out", "OUT"), disk: 48 << 10, want: exitFail},
		{name: "transfer bad input", args: with(transfer, "--sizes", "2TiB", "--out", "OUT"), want: exitUsage},
		{name: "transfer unreachable peer", args: with(transfer, "--peer", "127.0.0.1:1", "--out", "OUT"), want: exitUsage},
		{name: "transfer interrupted", args: with(transfer, "--reps", "100000", "--out", "OUT"), interruptAt: "transfer.csv", want: exitInterrupted},
		{name: "probe ok", args: with(probe, "--reps", "1", "--out", "OUT"), want: exitOK},
		{name: "probe error rows", args: []string{"probe", "--base-url", "SRV", "--tiers", "miss", "--prefix", "64", "--reps", "2", "--out", "OUT"}, want: exitFail},
		{name: "probe bad input", args: with(probe, "--bootstrap-port", "70000", "--out", "OUT"), want: exitUsage},
		{name: "probe unreachable", args: []string{"probe", "--base-url", "http://127.0.0.1:1", "--out", "OUT"}, want: exitUsage},
		{name: "probe interrupted", args: with(probe, "--reps", "100000", "--out", "OUT"), interruptAt: "probe.csv", want: exitInterrupted},
		{name: "interfere ok", args: with(interfere, "--out", "OUT"), want: exitOK},
		{name: "interfere error rows", args: []string{"interfere", "--base-url", "SRV", "--decode", "1", "--prefill", "64", "--reps", "1", "--timeout", "5s", "--out", "OUT"}, want: exitFail},
		{name: "interfere bad input", args: with(interfere, "--decode", "0", "--out", "OUT"), want: exitUsage},
		{name: "interfere interrupted", args: with(interfere, "--reps", "100000", "--out", "OUT"), interruptAt: "mb1.csv", want: exitInterrupted},
		{name: "replay ok", args: with(replaySmall, "--out", "OUT"), want: exitOK},
		{name: "replay error rows", args: []string{"replay", "--base-url", "SRV", "--sessions", "1", "--turns", "1", "--out", "OUT"}, want: exitFail},
		{name: "replay bad input", args: with(replaySmall, "--speedup", "NaN", "--out", "OUT"), want: exitUsage},
		{name: "replay unreachable", args: []string{"replay", "--base-url", "http://127.0.0.1:1", "--out", "OUT"}, want: exitUsage},
		{name: "replay interrupted", args: with(replaySmall, "--sessions", "1000", "--max-concurrency", "4", "--out", "OUT"), interruptAt: "replay.csv", want: exitInterrupted, keeps: "replay_run.csv"},
		{name: "knee ok", args: with([]string{"knee", "--capacity-blocks", "10,40", "--out", "OUT"}, smallSessions...), want: exitOK},
		{name: "knee bad input", args: []string{"knee", "--capacity-blocks", "0", "--out", "OUT"}, want: exitUsage},
		{name: "trace ok", args: []string{"trace", "TRACE", "--out", "OUT"}, want: exitOK},
		{name: "trace full disk", args: []string{"trace", "TRACE", "--out", "OUT"}, disk: 16 << 10, want: exitFail},
		{name: "trace bad input", args: []string{"trace", "missing.jsonl", "--out", "OUT"}, want: exitUsage},
		{name: "plan ok", args: with([]string{"plan", "TRACE", "--costs", costs, "--out", "OUT"}, tiny...), want: exitOK},
		{name: "plan full disk", args: with([]string{"plan", "TRACE", "--costs", costs, "--out", "OUT"}, tiny...), disk: 16 << 10, want: exitFail},
		{name: "plan bad input", args: with([]string{"plan", "TRACE", "--costs", "missing", "--out", "OUT"}, tiny...), want: exitUsage},
		{name: "serve stopped", args: []string{"serve", "--listen", "127.0.0.1:0", "--pool", "1MiB"}, interruptAt: "stdout:listening on", term: true, want: exitOK},
		{name: "serve bad input", args: []string{"serve", "--pool", "0"}, want: exitUsage},
		{name: "sim stopped", args: []string{"sim", "--listen", "127.0.0.1:0"}, interruptAt: "stdout:serving", want: exitOK},
		{name: "sim bad input", args: []string{"sim", "--time-scale", "NaN"}, want: exitUsage},
		{name: "report ok", args: []string{"report", costs, "--out", "OUT/REPORT.md"}, want: exitOK},
		{name: "report full disk", args: []string{"report", costs, "--out", "OUT/REPORT.md"}, disk: full, want: exitFail},
		{name: "report bad input", args: []string{"report", "missing"}, want: exitUsage},
		{name: "plot ok", args: []string{"plot", "COPY"}, want: exitOK},
		{name: "plot full disk", args: []string{"plot", "COPY"}, disk: full, want: exitFail},
		{name: "plot bad input", args: []string{"plot", "missing"}, want: exitUsage},
		{name: "compare ok", args: []string{"compare", costs, costs}, want: exitOK},
		{name: "compare bad input", args: []string{"compare", costs}, want: exitUsage},
		{name: "bench2csv ok", args: []string{"bench2csv", "testdata/bench2csv_in.txt", "--out", "OUT/b.csv"}, want: exitOK},
		{name: "bench2csv full disk", args: []string{"bench2csv", "testdata/bench2csv_in.txt", "--out", "OUT/b.csv"}, disk: full, want: exitFail},
		{name: "bench2csv bad input", args: []string{"bench2csv", "missing.txt"}, want: exitUsage},
	}
}

// Every command exits with the status the table gives for what
// happened: 0 all rows ok or skipped, 1 some rows are errors or a write
// failed, 2 bad input or nothing could start, 130 interrupted.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	costs := filepath.Join(work, "costs")
	mustRunCLI(t, "sweep", "--backend", "host", "--tiers", "host", "--model-config", "testdata/tiny_config.json",
		"--prefix", "16,32", "--reps", "2", "--out", costs)
	traceFile := filepath.Join(work, "t.jsonl")
	mustRunCLI(t, "trace", "--generate", traceFile, "--sessions", "20")
	srv, sim := failingServer(t), realtimeSim(t)
	for _, tc := range exitCases(costs) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, env := t.TempDir(), tc.env
			var denv []string
			if tc.disk != 0 {
				size := tc.disk
				if size < 0 {
					size = 48 << 10
				}
				dir, denv = smallDisk(t, size)
			}
			out := filepath.Join(dir, "run")
			var args []string
			for _, a := range tc.args {
				a = strings.ReplaceAll(a, "OUT", out)
				a = strings.ReplaceAll(a, "SRV", srv)
				a = strings.ReplaceAll(a, "SIM", sim)
				a = strings.ReplaceAll(a, "TRACE", traceFile)
				if a == "COPY" {
					a = copyResults(t, costs, out)
				}
				args = append(args, a)
			}
			if strings.Contains(strings.Join(tc.args, " "), "OUT/") {
				os.MkdirAll(out, 0o755)
			}
			if tc.disk < 0 {
				denv = fillDisk(t, dir, denv)
			}
			env = append(env, denv...)
			code, stderr := runExitCase(t, tc, args, env, out)
			if code != tc.want {
				t.Errorf("kvtier %s: exit %d, want %d; stderr:\n%s", strings.Join(args, " "), code, tc.want, stderr)
			}
			if tc.keeps != "" {
				tab, err := results.ReadTable(filepath.Join(out, tc.keeps))
				if err != nil || len(tab.Rows) != 1 || !strings.Contains(tab.Rows[0].Get(results.ColNote), "interrupted after") {
					t.Errorf("%s after the interruption: want one row noting it (%v)", tc.keeps, err)
				}
			}
			if tc.want == exitUsage && strings.Count(strings.TrimSpace(stderr), "\n") > 0 && !strings.HasPrefix(tc.args[0], "probe") {
				t.Errorf("bad input said in more than one line:\n%s", stderr)
			}
		})
	}
}

// runExitCase runs tc as a process and returns its exit status and
// stderr, interrupting it as tc says.
func runExitCase(t *testing.T, tc exitCase, args, env []string, out string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := helperCmd(ctx, nil, args...)
	cmd.Env = append(cmd.Env, env...)
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			if want, ok := strings.CutPrefix(tc.interruptAt, "stdout:"); ok && !once && strings.Contains(sc.Text(), want) {
				once = true
				close(ready)
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	if tc.interruptAt != "" {
		if !strings.HasPrefix(tc.interruptAt, "stdout:") {
			go func() {
				for ctx.Err() == nil {
					if tab, err := results.ReadTable(filepath.Join(out, tc.interruptAt)); err == nil && len(tab.Rows) > 0 {
						close(ready)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
		}
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("ended (%v) before it could be interrupted:\n%s", err, stderr.String())
		}
		sig := syscall.SIGINT
		if tc.term {
			sig = syscall.SIGTERM
		}
		cmd.Process.Signal(sig)
	}
	<-done
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// failingServer is an OpenAI-compatible server that lists a model and
// answers every generation with HTTP 500: every measured row is an error.
func failingServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"data":[{"id":"m","max_model_len":4096}]}`)
		case "/metrics", "/version":
			http.NotFound(w, r)
		default:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"message":"engine dead","code":500}}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// fillDisk fills the tmpfs at dir, or for a process whose files are
// limited in size (env), limits them to nothing: every write fails.
func fillDisk(t *testing.T, dir string, env []string) []string {
	t.Helper()
	if env != nil {
		return []string{"KVTIER_HELPER_FSIZE=1"}
	}
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return nil
		}
	}
}

// copyResults copies the CSVs and manifest of dir into to and returns to.
func copyResults(t *testing.T, dir, to string) string {
	t.Helper()
	os.MkdirAll(to, 0o755)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return to
}

// trace and plan interrupted while they read the trace exit 130 and
// write nothing.
func TestTraceInterrupted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.jsonl")
	mustRunCLI(t, "trace", "--generate", tr, "--sessions", "20")
	costs := filepath.Join(dir, "costs")
	mustRunCLI(t, "sweep", "--backend", "host", "--tiers", "host", "--model-config", "testdata/tiny_config.json",
		"--prefix", "16", "--reps", "1", "--out", costs)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"trace", tr, "--out", filepath.Join(dir, "trace")},
		{"plan", tr, "--costs", costs, "--model-config", "testdata/tiny_config.json", "--out", filepath.Join(dir, "plan")},
	} {
		var stdout, stderr strings.Builder
		if code := dispatch(ctx, &stdout, &stderr, args); code != exitInterrupted {
			t.Errorf("kvtier %s: exit %d, want %d; stderr:\n%s", strings.Join(args, " "), code, exitInterrupted, stderr.String())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("an interrupted analysis wrote %v", entries)
	}
}

// TestSecondSignalKills: a command stuck where its context does not reach
// (here opening a FIFO with no writer as a trace) ignores the first
// SIGINT, which asks it to stop, and dies of the second at once.
func TestSecondSignalKills(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := helperCmd(context.Background(), nil, "trace", fifo)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // past signal.Notify, into open(2)
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	if !waitOrKill(cmd, 10*time.Second) {
		t.Fatal("kvtier still running 10 s after a second SIGINT")
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("kvtier ended with %v, want killed by the second SIGINT", cmd.ProcessState)
	}
}
