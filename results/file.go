package results

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile writes a file made after the measurements (a summary, a
// manifest, a matrix, an index, a figure, a report) whole or not at all:
// write fills a temporary file beside path, which replaces path only once
// every byte is written and the file is closed. On any failure (a full
// disk, an error from write) the temporary file is removed and path is
// left as it was, so a reader never takes a truncated file for a complete
// one. Rows, which must survive a crash mid-run, are written as they are
// measured instead (CSV).
func WriteFile(path string, write func(w io.Writer) error) error {
	// A device, FIFO or socket at path would be replaced by the rename
	// (kvtier trace --generate /dev/full, as root, put a file there).
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: kvtier writes a file whole, by replacing it, and leaves this one alone", path)
	}
	// A name of its own, so that two kvtier processes writing the same
	// file (two reports into one directory) never write into each
	// other's temporary file: the last rename wins, whole.
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	bw := bufio.NewWriter(f)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// WriteBytes writes b to path whole or not at all, as WriteFile.
func WriteBytes(path string, b []byte) error {
	return WriteFile(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
