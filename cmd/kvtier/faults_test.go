package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtier/kvtier/internal/syncbuf"
	"github.com/kvtier/kvtier/results"
)

// serveProcess starts `kvtier serve args` as a process of its own and
// returns its address once it listens; the test's cleanup resumes it
// (after a SIGSTOP) and stops it.
func serveProcess(t *testing.T, args ...string) (string, *os.Process) {
	t.Helper()
	pr, pw := io.Pipe()
	cmd := helperCmd(context.Background(), nil, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Signal(syscall.SIGTERM)
		if !waitOrKill(cmd, 10*time.Second) {
			t.Error("kvtier serve did not stop on SIGTERM")
		}
		pw.Close()
	})
	ready := listenAddr(pr)
	select {
	case addr := <-ready:
		return addr, cmd.Process
	case <-time.After(20 * time.Second):
		t.Fatal("kvtier serve did not get ready")
	}
	return "", nil
}

// waitRows waits until path holds at least n rows.
func waitRows(t *testing.T, path string, n int, done <-chan int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if tab, err := results.ReadTable(path); err == nil && len(tab.Rows) >= n {
			return
		}
		select {
		case code := <-done:
			t.Fatalf("the run ended (exit %d) before %d rows", code, n)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%s: no %d rows within 30 s", path, n)
}

// A peer frozen mid-run (SIGSTOP of kvtier serve) becomes an error row
// within the idle timeout, the measured rows stay, and the run ends with
// exit status 1.
func TestFrozenPeer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file string
		args       []string
	}{
		{"transfer", "transfer.csv", []string{"transfer", "--sizes", "16MiB", "--layout", "contiguous", "--reps", "100000", "--warmup", "0"}},
		{"sweep", "sweep.csv", []string{"sweep", "--backend", "host", "--tiers", "remote", "--layout", "layerwise", "--copy", "percopy",
			"--model-config", "testdata/tiny_config.json", "--prefix", "64k", "--reps", "100000", "--warmup", "0",
			// A budget far above the run's length: on a loaded machine a
			// slow first block made the estimate exceed a 60 s budget, and
			// the prefix was skipped before the peer could be frozen.
			"--budget", "1h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr, serve := serveProcess(t, "--pool", "64MiB")
			out := filepath.Join(t.TempDir(), "run")
			args := append(tc.args, "--peer", addr, "--idle-timeout", "1s", "--out", out)
			done := make(chan int, 1)
			var stderr syncbuf.Buffer
			go func() { done <- dispatch(context.Background(), io.Discard, &stderr, args) }()
			waitRows(t, filepath.Join(out, tc.file), 2, done)
			serve.Signal(syscall.SIGSTOP)
			stopped := time.Now()
			var code int
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the run still waits on a frozen peer after 30 s")
			}
			took := time.Since(stopped)
			tab, err := results.ReadTable(filepath.Join(out, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var ok, idle int
			for _, r := range tab.Rows {
				switch {
				case r.Status == results.StatusOK:
					ok++
				case r.Status == results.StatusError && strings.Contains(r.Reason, "moved no data for 1s (idle timeout)"):
					idle++
				}
			}
			if code != exitFail || ok < 2 || idle < 1 {
				t.Errorf("exit %d after %s, %d ok rows, %d idle-timeout rows; stderr:\n%s", code, took, ok, idle, stderr.String())
			}
			if tmp, _ := filepath.Glob(filepath.Join(out, "manifest.json.*.tmp")); len(tmp) > 0 {
				t.Error("manifest.json.tmp left behind")
			}
		})
	}
}

// A disk that fills mid-run (a 48 KiB tmpfs as root, else a file-size
// limit on the process) ends the run with exit status 1: the rows
// written before stay readable and no temporary file is left.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file string
		args       []string
	}{
		{"transfer", "transfer.csv", []string{"transfer", "--sizes", "64KiB", "--layout", "contiguous", "--reps", "100000", "--warmup", "0"}},
		{"sweep", "sweep.csv", []string{"sweep", "--backend", "host", "--tiers", "host", "--layout", "blockwise", "--copy", "percopy",
			"--model-config", "testdata/tiny_config.json", "--prefix", "16", "--reps", "100000", "--warmup", "0", "--budget", "60s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, env := smallDisk(t, 48<<10)
			out := filepath.Join(dir, "run")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := helperCmd(ctx, nil, append(tc.args, "--out", out)...)
			cmd.Env = append(cmd.Env, env...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			if err != nil && code < 0 {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			tab, rerr := results.ReadTable(filepath.Join(out, tc.file))
			if code != exitFail || rerr != nil || len(tab.Rows) == 0 || len(tab.Malformed) > 0 {
				t.Fatalf("exit %d, table %v (%v); stderr:\n%s", code, tab, rerr, stderr.String())
			}
			if !strings.Contains(stderr.String(), "no space left on device") && !strings.Contains(stderr.String(), "file too large") {
				t.Errorf("stderr does not say the disk is full:\n%s", stderr.String())
			}
			// Each message is one line naming the command, and none
			// claims the files were written.
			for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				if !strings.HasPrefix(l, "kvtier "+tc.name+":") || strings.Contains(l, ": wrote ") {
					t.Errorf("stderr line %q: want each to begin %q and none to say the files were written", l, "kvtier "+tc.name+":")
				}
			}
			if tmp, _ := filepath.Glob(filepath.Join(out, "*.tmp")); len(tmp) > 0 {
				t.Errorf("left behind: %v", tmp)
			}
		})
	}
}

// smallDisk returns a directory on a tmpfs of size bytes (as root), or a
// plain directory and the environment that limits the size of the files
// the helper process writes.
func smallDisk(t *testing.T, size int) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "faults-tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 && syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)) == nil {
		t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
		return dir, nil
	}
	return dir, []string{"KVTIER_HELPER_FSIZE=" + strconv.Itoa(size)}
}
