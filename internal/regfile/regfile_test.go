package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRead: a regular file is read whole up to the limit; a larger one,
// a directory, a device and a FIFO without a writer are refused at once.
func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(file, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "sweep.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		limit   int64
		want    string
		wantErr error
	}{
		{file, 10, "0123456789", nil},
		{file, 9, "", ErrTooLarge},
		{dir, 10, "", ErrNotRegular},
		{"/dev/zero", 10, "", ErrNotRegular},
		{fifo, 10, "", ErrNotRegular},
		{filepath.Join(dir, "absent"), 10, "", os.ErrNotExist},
	}
	for _, tt := range tests {
		done := make(chan struct{})
		var b []byte
		var err error
		go func() {
			defer close(done)
			b, err = Read(tt.path, tt.limit)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) still waiting after 10 s", tt.path)
		}
		if string(b) != tt.want || (tt.wantErr == nil) != (err == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
			t.Errorf("Read(%s, %d) = %q, %v; want %q, %v", tt.path, tt.limit, b, err, tt.want, tt.wantErr)
		}
	}
}
