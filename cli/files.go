package cli

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckFileDir says whether a file can be written at path: its
// directory must exist and be writable, and what is at path, if anything,
// a regular file (not a device, FIFO or directory the write would replace).
func CheckFileDir(path string) error {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: no directory %s", path, dir)
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: kvtier writes a file whole, by replacing it, and leaves this one alone", path)
	}
	return CheckOutDir(dir)
}
