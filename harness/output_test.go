package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// A run refused at start removes its directory and the parents it made,
// and only those.
func TestRemoveLeavesNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	o, err := Create(OutDir{Path: filepath.Join(root, "a", "b", "run")}, "x", []string{"kvtier", "x"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Remove(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
	if _, err := os.Stat(root); err != nil {
		t.Errorf("removed a directory it did not make: %v", err)
	}
}
