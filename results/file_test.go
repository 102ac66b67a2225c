package results

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteFileWholeOrNothing: a derived file replaces the old one only
// when it is written whole; a failure half-way (a full disk) leaves the
// old file and no temporary file.
func TestWriteFileWholeOrNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sweep_summary.csv")
	if err := WriteBytes(path, []byte("old\n")); err != nil {
		t.Fatal(err)
	}
	full := errors.New("no space left on device")
	err := WriteFile(path, func(w io.Writer) error {
		if _, err := w.Write(make([]byte, 1<<20)); err != nil {
			return err
		}
		return full
	})
	if !errors.Is(err, full) {
		t.Fatalf("WriteFile = %v, want the writer's error", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "old\n" {
		t.Errorf("after a failed write the file holds %d bytes (%v), want the old 4", len(b), err)
	}
	if err := WriteBytes(path, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Errorf("file holds %q after a whole write", b)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode(), err)
	}
	if err := WriteBytes(filepath.Join(dir, "missing", "x"), nil); err == nil {
		t.Error("WriteBytes into a missing directory succeeded")
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestWriteFileConcurrent: writers of one path in parallel (two `kvtier
// report` runs into one directory) never share a temporary file: every
// write succeeds and the file ends as one writer's whole content.
func TestWriteFileConcurrent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "REPORT.md")
	const writers, size = 8, 256 << 10
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			errs <- WriteFile(path, func(w io.Writer) error {
				for range size / 1024 {
					if _, err := w.Write(bytes.Repeat([]byte{byte('a' + i)}, 1024)); err != nil {
						return err
					}
				}
				return nil
			})
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Errorf("concurrent WriteFile: %v", err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) != size || bytes.Count(b, b[:1]) != size {
		t.Errorf("file holds %d bytes (%v), not one writer's %d identical bytes", len(b), err, size)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// A path that is no regular file (a device such as /dev/full, a FIFO) is
// refused, not replaced by the rename that writes a file whole.
func TestWriteFileLeavesSpecialFiles(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	err := WriteBytes(fifo, []byte("x"))
	if fi, serr := os.Lstat(fifo); err == nil || serr != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("WriteBytes over a FIFO: %v; the FIFO is now %v (%v)", err, fi.Mode(), serr)
	}
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("error %v, want one saying the path is not a regular file", err)
	}
}
