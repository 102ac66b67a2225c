package cli

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckFileDir says whether a file can be written at path: its
// directory must exist and be writable.
func CheckFileDir(path string) error {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: no directory %s", path, dir)
	}
	return CheckOutDir(dir)
}
