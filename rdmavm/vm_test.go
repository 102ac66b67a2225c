//go:build linux && rdmavm

// The VM test builds only with -tags rdmavm, which `make test-rdma` sets:
// booting the guest under TCG takes minutes of both cores, and inside
// `go test -race ./...` beside the race-instrumented packages it ran past
// its limit on a loaded machine. check_test.go (the CSV checks) still runs
// in `make test`.

package rdmavm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// skipStatus is the exit status the script uses for a skip when asked to.
const skipStatus = 77

// vmTimeout bounds the whole script: kvtier build, kernel fetch on a
// clean machine, initramfs, boot and cases (about 2 minutes alone on 2
// cores; the guest is stopped after KVTIER_RXE_TIMEOUT, 150 s, without
// output, or KVTIER_RXE_MAX, 900 s, in all, so a loaded machine slows it
// without failing it).
const vmTimeout = 20 * time.Minute

// TestSoftRoCE runs scripts/rxe-vm-test.sh. KVTIER_RXE_CASES narrows the
// guest cases (comma-separated, see scripts/rxe-vm/cases.sh).
func TestSoftRoCE(t *testing.T) {
	if testing.Short() {
		t.Skip("rdmavm: -short: the soft-RoCE VM test boots qemu")
	}
	if os.Geteuid() != 0 {
		t.Skip("rdmavm: needs root to install qemu and fetch the guest kernel")
	}
	script, err := filepath.Abs(filepath.Join("..", "scripts", "rxe-vm-test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()

	// Logs and CSVs stay for a look when the test fails.
	out, err := os.MkdirTemp("", "kvtier-rxe-test-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", script, "-o", out)
	// Another run on this machine holds the script's lock: wait for it
	// (the script's default, 300 s), then skip rather than overrun.
	cmd.Env = append(os.Environ(), "KVTIER_RXE_SKIP_STATUS=77")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	// On our deadline the script's process group gets SIGTERM; the
	// script passes it on to qemu (in timeout's process group).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second

	start := time.Now()
	err = cmd.Run()
	elapsed := time.Since(start).Round(time.Second)
	var exit *exec.ExitError
	switch {
	case err == nil:
		for _, l := range matching(log.String(), "KVTIER-CASE:", "rxe-vm-test: PASS") {
			l, _, _ = strings.Cut(l, "; logs and CSVs in") // removed below on success
			t.Log(l)
		}
		probs := csvProblems(out, os.Getenv("KVTIER_RXE_CASES") != "")
		for _, p := range probs {
			t.Error(p)
		}
		if len(probs) == 0 {
			os.RemoveAll(out)
		} else {
			t.Logf("the CSVs are in %s", out)
		}
	case errors.As(err, &exit) && exit.ExitCode() == skipStatus:
		os.RemoveAll(out)
		t.Skip(firstOr(matching(log.String(), "rxe-vm-test: SKIP:"), "rxe-vm-test skipped"))
	case ctx.Err() != nil:
		t.Fatalf("rxe-vm-test did not finish in %v; logs in %s; last output:\n%s", vmTimeout, out, tail(log.String(), 60))
	default:
		t.Fatalf("rxe-vm-test failed after %v (%v); logs in %s:\n%s", elapsed, err, out, tail(log.String(), 60))
	}
}

// matching returns the lines of s that start with one of prefixes.
func matching(s string, prefixes ...string) []string {
	var got []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		for _, p := range prefixes {
			if strings.HasPrefix(sc.Text(), p) {
				got = append(got, sc.Text())
				break
			}
		}
	}
	return got
}

func firstOr(lines []string, def string) string {
	if len(lines) == 0 {
		return def
	}
	return lines[0]
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
