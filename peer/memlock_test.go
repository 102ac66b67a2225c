package peer

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/rdma/rdmatest"
)

func TestMemlockProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n     int64
		limit uint64
		cap   bool
		want  string
	}{
		{1 << 20, 64 << 10, false, "locked-memory limit (RLIMIT_MEMLOCK) is 64 KiB"},
		{1 << 20, 64 << 10, true, ""},
		{1 << 20, unix.RLIM_INFINITY, false, ""},
		{64 << 10, 64 << 10, false, ""},
	} {
		err := memlockProblem(tc.n, tc.limit, tc.cap)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "ulimit -l unlimited") || !strings.Contains(err.Error(), "--ulimit memlock=-1")) {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	for status, want := range map[string]bool{
		"Name:\tx\nCapEff:\t000001ffffffffff\n": true,
		"CapEff:\t0000000000000000\n":           false,
		"CapEff:\t0000000000004000\n":           true,
		"CapPrm:\t0000000000004000\n":           false,
	} {
		if got := holdsIPCLock(status); got != want {
			t.Errorf("holdsIPCLock(%q) = %v", status, got)
		}
	}
}

// memlockChild marks the process TestMemlockLimit starts.
const memlockChild = "KVTIER_TEST_MEMLOCK_CHILD"

// TestMemlockLimit runs itself again under a memlock limit of 64 KiB
// (prlimit) and, as root, without CAP_IPC_LOCK (setpriv): a verbs server
// asked to register a 1 MiB pool refuses the client with the limit and
// how to raise it, before libibverbs fails with a bare ENOMEM.
func TestMemlockLimit(t *testing.T) {
	if os.Getenv(memlockChild) != "" {
		rc := fakeVerbs(t)
		addr, _ := startServerConfig(t, 1<<20, 1, ServerConfig{Transport: Verbs, RDMA: rc})
		_, err := Dial(context.Background(), addr, DialOptions{Transport: Verbs, RDMA: rc})
		if err == nil || !strings.Contains(err.Error(), "RLIMIT_MEMLOCK) is 64 KiB") || !strings.Contains(err.Error(), "ulimit -l unlimited") {
			t.Fatalf("verbs session under a 64 KiB memlock limit: %v", err)
		}
		return
	}
	rdmatest.Build(t) // skips where the fake cannot be built
	args := []string{"prlimit", "--memlock=65536:65536"}
	if os.Geteuid() == 0 {
		args = append(args, "setpriv", "--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock", "--")
	}
	for _, a := range []string{"prlimit", "setpriv"} {
		if _, err := exec.LookPath(a); err != nil && (a == "prlimit" || os.Geteuid() == 0) {
			t.Skipf("no %s (util-linux) to run under a memlock limit without CAP_IPC_LOCK", a)
		}
	}
	args = append(args, os.Args[0], "-test.run=^TestMemlockLimit$", "-test.count=1", "-test.v")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), memlockChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "setpriv:") || strings.Contains(string(out), "prlimit:") {
			t.Skipf("cannot drop CAP_IPC_LOCK or set the limit here: %s", out)
		}
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestMemlockLimit") {
		t.Fatalf("the child did not run the check:\n%s", out)
	}
}
