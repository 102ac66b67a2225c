package diskio

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// refuseEnv asks the test binary, run again as a child, to block
// io_uring_setup with a seccomp filter returning that errno, then try to
// open a ring and print what it got.
const refuseEnv = "KVTIER_DISKIO_TEST_REFUSE_ERRNO"

// TestUringRefused runs NewReader where a seccomp filter refuses
// io_uring_setup, as container runtimes do, with ENOSYS and with EPERM:
// the error wraps ErrRefused and names the errno.
func TestUringRefused(t *testing.T) {
	t.Parallel()
	if auditArch() == 0 {
		t.Skipf("no seccomp filter for %s in this test", runtime.GOARCH)
	}
	for _, errno := range []syscall.Errno{syscall.ENOSYS, syscall.EPERM} {
		t.Run(unix.ErrnoName(errno), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestRefusedChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", refuseEnv, errno))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "refused=true ") || !strings.Contains(string(out), unix.ErrnoName(errno)) {
				t.Fatalf("child said:\n%s\nwant refused=true naming %s", out, unix.ErrnoName(errno))
			}
		})
	}
}

// TestRefusedChild is the child of TestUringRefused; it does nothing in
// a plain test run.
func TestRefusedChild(t *testing.T) {
	v := os.Getenv(refuseEnv)
	if v == "" {
		t.Skip("run by TestUringRefused")
	}
	errno, err := strconv.Atoi(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := blockUringSetup(syscall.Errno(errno)); err != nil {
		t.Fatalf("seccomp: %v", err)
	}
	_, err = NewReader(Uring, 4, nil)
	fmt.Printf("refused=%v %v\n", errors.Is(err, ErrRefused), err)
}

func auditArch() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	}
	return 0
}

// blockUringSetup installs, on every thread of the process, a seccomp
// filter that fails io_uring_setup with errno and allows the rest.
func blockUringSetup(errno syscall.Errno) error {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	prog := []unix.SockFilter{
		{Code: ld, K: 4}, // seccomp_data.arch
		{Code: jeq, Jt: 0, Jf: 3, K: auditArch()},
		{Code: ld, K: 0}, // seccomp_data.nr
		{Code: jeq, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(errno)},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_NO_NEW_PRIVS: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}
