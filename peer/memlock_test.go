package peer

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/rdma/rdmatest"
)

func TestMemlockProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int64
		st   lockState
		want string
	}{
		{1 << 20, lockState{limit: 64 << 10}, "locked-memory limit (RLIMIT_MEMLOCK) is 64 KiB; raise"},
		{1 << 20, lockState{limit: 64 << 10, capLock: true}, ""},
		{1 << 20, lockState{limit: unix.RLIM_INFINITY}, ""},
		{64 << 10, lockState{limit: 64 << 10}, ""},
		// A second session: its pool fits the limit, not beside the first's.
		{1 << 20, lockState{limit: 2 << 20, pinned: 3 << 19}, "is 2 MiB and the process has 1.5 MiB pinned already (VmPin"},
		{1 << 20, lockState{limit: 2 << 20, pinned: 1 << 20}, ""},
		// A rootless container: CapEff shows CAP_IPC_LOCK, the kernel does not count it.
		{1 << 20, lockState{limit: 64 << 10, userNS: true}, "CAP_IPC_LOCK inside this user namespace does not lift it"},
	} {
		err := memlockProblem(tc.n, tc.st)
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

func TestProcStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]int64{
		"Name:\tx\nVmLck:\t       0 kB\nVmPin:\t    1536 kB\nVmHWM:\t 100 kB\n": 1536 << 10,
		"VmPin:\t       0 kB\n": 0,
		"Name:\tx\n":            0,
	} {
		if got := pinnedBytes(status); got != want {
			t.Errorf("pinnedBytes(%q) = %d, want %d", status, got, want)
		}
	}
	for m, want := range map[string]bool{
		"         0          0 4294967295\n": true,
		"         0       1000          1\n": false,
		"0 100000 65536\n":                   false,
	} {
		if got := initialUserNS(m); got != want {
			t.Errorf("initialUserNS(%q) = %v", m, got)
		}
	}
}

// TestRegENOMEM: a registration's bare ENOMEM (the limit reached by
// another session between the check and the call) says what to do.
func TestRegENOMEM(t *testing.T) {
	t.Parallel()
	enomem := &rdma.Error{Op: "reg mr", Errno: syscall.ENOMEM, Msg: "ibv_reg_mr: Cannot allocate memory"}
	err := regError(enomem, 1<<20, lockState{limit: 2 << 20, pinned: 3 << 19}, true)
	if !errors.Is(err, syscall.ENOMEM) || !strings.Contains(err.Error(), "1 MiB more of host memory with 1.5 MiB pinned under a locked-memory limit (RLIMIT_MEMLOCK) of 2 MiB") ||
		!strings.Contains(err.Error(), "ulimit -l unlimited") {
		t.Errorf("ENOMEM: %v", err)
	}
	if err := regError(enomem, 1<<20, lockState{}, false); !strings.Contains(err.Error(), "ulimit -l unlimited") {
		t.Errorf("ENOMEM, state unknown: %v", err)
	}
	other := &rdma.Error{Op: "reg mr", Errno: syscall.EINVAL}
	if err := regError(other, 1<<20, lockState{}, true); err != error(other) {
		t.Errorf("EINVAL: %v", err)
	}
	if err := regError(nil, 1<<20, lockState{}, true); err != nil {
		t.Errorf("no error: %v", err)
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
