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
