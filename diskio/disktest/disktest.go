// Package disktest holds what the disk tier's tests share: small
// filesystems for its failure paths (a loop-mounted ext4 that fills up,
// a tmpfs), buffers off the Go heap, and a count of a file's pages in
// the page cache. Mount
// points are named kvtier-disk-* under the test's temporary directory
// and unmounted when the test ends. Tests that need them are skipped
// where the process cannot mount (not root, no loop devices).
package disktest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
	"testing"
)

// LoopExt4 returns a directory on a fresh ext4 of size bytes, loop
// mounted from an image file; the test is skipped where that cannot be
// done here.
func LoopExt4(t testing.TB, size int64) string {
	t.Helper()
	need(t, "mkfs.ext4", "mount", "umount")
	tmp := t.TempDir()
	img := filepath.Join(tmp, "kvtier-disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", img).CombinedOutput(); err != nil {
		t.Skipf("disktest: mkfs.ext4: %v: %s", err, out)
	}
	return mount(t, filepath.Join(tmp, "kvtier-disk-ext4"), "-o", "loop", img)
}

// Tmpfs returns a directory on a fresh tmpfs of size bytes; the test is
// skipped where it cannot be mounted.
func Tmpfs(t testing.TB, size int64) string {
	t.Helper()
	need(t, "mount", "umount")
	dir := filepath.Join(t.TempDir(), "kvtier-disk-tmpfs")
	return mount(t, dir, "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10), "kvtier-disk-tmpfs")
}

func mount(t testing.TB, dir string, args ...string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", append(args, dir)...).CombinedOutput(); err != nil {
		t.Skipf("disktest: mount %v: %v: %s", args, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("disktest: umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

func need(t testing.TB, cmds ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("disktest: mounting needs root")
	}
	for _, c := range cmds {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("disktest: no %s", c)
		}
	}
}

// Buffer returns n bytes of anonymous memory, off the Go heap as the
// backends' buffers are (so it may be registered with a ring), unmapped
// when the test ends.
func Buffer(t testing.TB, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// Resident counts the pages of the file at path that are in the page
// cache (mincore over a mapping of it).
func Resident(t testing.TB, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		t.Fatalf("disktest: %s: %v (size %d)", path, err, st.Size())
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
