// Package regfile reads the files kvtier is handed to read back (results
// CSVs, manifests, config.json, figure indexes, figures): regular files
// only, opened without waiting (a FIFO, a device or a directory in their
// place is refused at once, never blocked on), and at most a given number
// of bytes, so nothing outside kvtier can make a reader hang or grow
// without bound.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Errors matched by errors.Is for a file refused before it is read whole.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("larger than")
)

// open opens the regular file at path for reading. O_NONBLOCK makes the
// open of a FIFO return at once instead of waiting for a writer; it does
// not change how a regular file reads.
func open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Read reads the regular file at path whole, refusing one larger than
// limit bytes ("PATH: larger than LIMIT bytes", ErrTooLarge) without
// reading more than limit+1 bytes of it.
func Read(path string, limit int64) ([]byte, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w %d bytes", path, ErrTooLarge, limit)
	}
	return b, nil
}
