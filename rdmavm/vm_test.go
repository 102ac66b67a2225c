//go:build linux

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
// clean machine, initramfs, boot and cases.
const vmTimeout = 4 * time.Minute

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

	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "KVTIER_RXE_SKIP_STATUS=77")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// The script runs qemu under its own timeout; on our deadline the
	// whole process group goes, qemu included.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second

	start := time.Now()
	err = cmd.Run()
	elapsed := time.Since(start).Round(time.Second)
	var exit *exec.ExitError
	switch {
	case err == nil:
		for _, l := range matching(out.String(), "KVTIER-CASE:", "rxe-vm-test: PASS") {
			t.Log(l)
		}
	case errors.As(err, &exit) && exit.ExitCode() == skipStatus:
		t.Skip(firstOr(matching(out.String(), "rxe-vm-test: SKIP:"), "rxe-vm-test skipped"))
	case ctx.Err() != nil:
		t.Fatalf("rxe-vm-test did not finish in %v; last output:\n%s", vmTimeout, tail(out.String(), 60))
	default:
		t.Fatalf("rxe-vm-test failed after %v (%v):\n%s", elapsed, err, tail(out.String(), 60))
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
