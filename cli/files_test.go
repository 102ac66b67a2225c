package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A file kvtier writes whole may replace a regular file, never a
// device, a FIFO or a directory.
func TestCheckFileDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	plain := filepath.Join(dir, "plain.jsonl")
	os.WriteFile(plain, nil, 0o644)
	for _, tc := range []struct{ path, want string }{
		{plain, ""},
		{filepath.Join(dir, "new.jsonl"), ""},
		{fifo, "not a regular file"},
		{dir, "not a regular file"},
		{"/dev/null", "not a regular file"},
		{filepath.Join(dir, "missing", "x"), "no directory"},
	} {
		err := CheckFileDir(tc.path)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckFileDir(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
}

// An --out nothing can be created in is refused before any work, even
// where permission bits say yes (root under /proc), and a writable one
// is accepted with nothing left behind.
func TestCheckOutDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := CheckOutDir(filepath.Join(dir, "a", "b")); err != nil {
		t.Errorf("a writable --out refused: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the check left %v behind", entries)
	}
	long := filepath.Join(dir, strings.Repeat("x", 300))
	if err := CheckOutDir(long); err == nil {
		t.Error("a 300-byte name accepted")
	}
	if fi, err := os.Stat("/proc/self"); err != nil || !fi.IsDir() {
		t.Skip("no /proc")
	}
	if err := CheckOutDir("/proc/kvtier-out"); err == nil {
		t.Error("--out /proc/kvtier-out accepted")
	}
}
