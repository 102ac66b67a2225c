package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/results"
)

// A disk sweep ended by a hung-up ssh session (SIGHUP) removes its
// scratch file, writes its summary and exits 130, as Ctrl-C does; one
// whose stderr's reader went away (kvtier ... 2>&1 | head -1; a broken
// pipe) goes on silently to its end and keeps every row. Before, the
// first killed the process with the file (960 MiB at 8k) left behind
// and no summary, and the second aborted the measurement.
func TestEndSignalsCleanUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		prefixes string
		end      func(t *testing.T, p *os.Process, stderr *os.File)
		want     int
	}{
		{"SIGHUP", "64,128,192,256,320,384,448,512", func(t *testing.T, p *os.Process, _ *os.File) { p.Signal(syscall.SIGHUP) }, exitInterrupted},
		{"broken pipe", "64,128", func(t *testing.T, _ *os.Process, stderr *os.File) { stderr.Close() }, exitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out := filepath.Join(dir, "run")
			scratch := filepath.Join(dir, "scratch")
			if err := os.Mkdir(scratch, 0o755); err != nil {
				t.Fatal(err)
			}
			// A deadline for a hang, not a measurement: the broken pipe's
			// sweep runs its two configurations to the end (about 4 s
			// without the race detector), and under it, on a machine at load
			// 26, it passed 30 s once.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := helperCmd(ctx, nil, "sweep", "--backend", "host", "--tiers", "disk", "--io", "pread",
				"--model-config", "testdata/tiny_config.json", "--prefix", tc.prefixes, "--layout", "blockwise", "--copy", "percopy",
				"--reps", "100000", "--warmup", "1", "--budget", "1s", "--disk-dir", scratch, "--out", out)
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = pw
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			waitForRow(t, ctx, filepath.Join(out, sweep.File))
			// The sweep writes to stderr only between configurations: keep
			// reading until the end so it never blocks, except for the
			// broken pipe, whose reader goes away now.
			if tc.name != "broken pipe" {
				go bufio.NewReader(pr).WriteTo(discard{})
			}
			// The broken pipe takes effect at the sweep's next line on
			// stderr, at the end of the first configuration.
			tc.end(t, cmd.Process, pr)
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tc.want {
				t.Errorf("exit %d (%v), want %d", code, cmd.ProcessState, tc.want)
			}
			if left, _ := filepath.Glob(filepath.Join(scratch, "*")); len(left) > 0 {
				t.Errorf("scratch files left behind: %v", left)
			}
			if _, err := os.Stat(filepath.Join(out, "sweep_summary.csv")); err != nil {
				t.Errorf("no summary: %v", err)
			}
			if tc.want == exitOK {
				tab, err := results.ReadTable(filepath.Join(out, sweep.File))
				if err != nil || !slices.ContainsFunc(tab.Rows, func(r results.Row) bool { return r.Get(results.ColPrefixTokens) == "128" }) {
					t.Errorf("no row of the configuration after the pipe broke (%v)", err)
				}
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// waitForRow waits until the CSV at path holds a row.
func waitForRow(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	for ctx.Err() == nil {
		if tab, err := results.ReadTable(path); err == nil && len(tab.Rows) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no row in %s before the deadline", path)
}

// Ctrl-C while a peer accepts the connection but never answers the
// handshake ends the command as interrupted (130), not as an unreachable
// peer (2) once the handshake's timeout ran out.
func TestInterruptDuringHandshake(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered
		}
	}()
	for _, args := range [][]string{
		{"transfer", "--peer", ln.Addr().String(), "--sizes", "64KiB"},
		{"sweep", "--backend", "host", "--tiers", "remote", "--peer", ln.Addr().String(), "--prefix", "16"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel) // Ctrl-C once the handshake is under way
		var stdout, stderr strings.Builder
		args = append(args, "--out", filepath.Join(t.TempDir(), "run"))
		if code := dispatch(ctx, &stdout, &stderr, args); code != exitInterrupted {
			t.Errorf("kvtier %s: exit %d, want %d; stderr %q", args[0], code, exitInterrupted, stderr.String())
		}
		cancel()
	}
}
