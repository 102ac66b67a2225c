//go:build linux

package rdmavm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtier/kvtier/results"
)

// skipStatus is the exit status the script uses for a skip when asked to.
const skipStatus = 77

// vmTimeout bounds the whole script: kvtier build, kernel fetch on a
// clean machine, initramfs, boot and cases.
const vmTimeout = 5 * time.Minute

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
	// Another run on this machine (a second go test) holds the script's
	// lock: wait a minute for it, then skip rather than overrun.
	cmd.Env = append(os.Environ(), "KVTIER_RXE_SKIP_STATUS=77", "KVTIER_RXE_LOCK_WAIT=60")
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

// want is what the rows of a CSV the guest sent back must hold, checked
// again here with the project's own CSV reader (the guest checks with awk).
type want struct {
	file    string // as the host script names it: CASE-FILE.csv
	minRows int
	cells   map[string]string // column -> value on every row
}

var wantCSVs = []want{
	{"transfer-transfer.csv", 12, map[string]string{
		"suite": "transfer", "transport": "verbs", "device": "rxe0", "tier": "remote",
		"status": "ok", "verified": "true", "conns": "2"}},
	{"sweep-sweep.csv", 8, map[string]string{
		"suite": "sweep", "transport": "verbs", "tier": "remote", "status": "ok", "verified": "true"}},
	{"store-sweep.csv", 2, map[string]string{
		"suite": "sweep", "transport": "verbs", "tier": "remote", "direction": "store", "status": "ok", "verified": "true"}},
	{"bad_rkey-transfer.csv", 1, map[string]string{"transport": "verbs", "status": "error"}},
	{"out_of_pool-transfer.csv", 1, map[string]string{"transport": "verbs", "status": "error"}},
	{"mesh-mesh.csv", 4, map[string]string{
		"suite": "mesh", "transport": "verbs", "device": "rxe0", "status": "ok", "verified": "true", "pair": "intra"}},
}

// csvProblems re-reads the CSVs in dir that wantCSVs names and says what
// is wrong with them. A missing file is a problem unless narrowed (only
// some cases ran).
func csvProblems(dir string, narrowed bool) []string {
	var probs []string
	for _, w := range wantCSVs {
		path := filepath.Join(dir, w.file)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && narrowed {
			continue
		}
		rows, _, err := results.ReadCSV(path)
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: %v", w.file, err))
			continue
		}
		if len(rows) < w.minRows {
			probs = append(probs, fmt.Sprintf("%s: %d rows, want at least %d", w.file, len(rows), w.minRows))
		}
		for i, r := range rows {
			for _, col := range slices.Sorted(maps.Keys(w.cells)) {
				if got := r.Cell(col); got != w.cells[col] {
					probs = append(probs, fmt.Sprintf("%s row %d: %s = %q, want %q (reason %q)", w.file, i+1, col, got, w.cells[col], r.Reason))
				}
			}
			if r.Status == results.StatusOK && !(r.Seconds > 0 && r.Bytes > 0) {
				probs = append(probs, fmt.Sprintf("%s row %d: ok row with seconds %v, bytes %d", w.file, i+1, r.Seconds, r.Bytes))
			}
		}
	}
	return probs
}
