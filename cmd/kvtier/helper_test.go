package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtier/kvtier/cli"
)

// The exit statuses, by their short names in these tests.
const (
	exitOK          = cli.ExitOK
	exitFail        = cli.ExitFail
	exitUsage       = cli.ExitUsage
	exitInterrupted = cli.ExitInterrupted
)

// runCLI runs kvtier with args and returns exit status, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := dispatch(context.Background(), &stdout, &stderr, args)
	return code, stdout.String(), stderr.String()
}

// mustRunCLI runs kvtier with args, failing the test unless it exits 0,
// and returns its stdout and stderr.
func mustRunCLI(t *testing.T, args ...string) (string, string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("kvtier %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return stdout, stderr
}

// freePort returns a loopback address nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestHelperProcess is this test binary re-executed as kvtier: it runs
// the command in KVTIER_HELPER_ARGS (separated by \x1f) and exits with
// its status. Tests start it with helperCmd. KVTIER_HELPER_FSIZE limits
// the size of the files it writes.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("KVTIER_HELPER") == "" {
		t.Skip("helper process of the tests that run kvtier as a process")
	}
	if n, err := strconv.ParseUint(os.Getenv("KVTIER_HELPER_FSIZE"), 10, 64); err == nil {
		// A full disk without root: files past n bytes fail with EFBIG
		// (Go ignores SIGXFSZ).
		lim := syscall.Rlimit{Cur: n, Max: n}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	args := strings.Split(os.Getenv("KVTIER_HELPER_ARGS"), "\x1f")
	os.Exit(run(os.Stdout, os.Stderr, args))
}

// helperCmd returns a command running kvtier args as a process of its
// own, after prefix (e.g. ip netns exec NS; none for nil).
func helperCmd(ctx context.Context, prefix []string, args ...string) *exec.Cmd {
	argv := append(append([]string(nil), prefix...), os.Args[0], "-test.run=^TestHelperProcess$")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "KVTIER_HELPER=1", "KVTIER_HELPER_ARGS="+strings.Join(args, "\x1f"))
	return cmd
}

// waitOrKill waits up to d for cmd, already told to stop, to exit, and
// kills it if it has not; it reports whether cmd exited in time.
func waitOrKill(cmd *exec.Cmd, d time.Duration) bool {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		cmd.Process.Kill()
		return false
	}
}

// listenAddr reads kvtier serve's stdout from r and sends the address of
// its ready line ("kvtier serve: listening on ADDR ...").
func listenAddr(r io.Reader) <-chan string {
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if i := strings.Index(sc.Text(), "listening on "); i >= 0 {
				ready <- strings.Fields(sc.Text()[i+len("listening on "):])[0]
			}
		}
	}()
	return ready
}
