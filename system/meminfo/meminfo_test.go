package meminfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	const text = "MemTotal:       16384 kB\nMemFree: 100 kB\nMemAvailable:    8192 kB\n"
	for _, tc := range []struct {
		text, key string
		want      int64
		ok        bool
	}{
		{text, "MemTotal", 16384, true},
		{text, "MemAvailable", 8192, true},
		{text, "Mem", 0, false},
		{"MemTotal: x kB\n", "MemTotal", 0, false},
		{"MemTotal:\n", "MemTotal", 0, false},
	} {
		if got, ok := Parse(tc.text, tc.key); got != tc.want || ok != tc.ok {
			t.Errorf("Parse(%q, %q) = %d, %v; want %d, %v", tc.text, tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAvailable(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "proc"), 0o755)
	if _, err := Available(root); err == nil {
		t.Error("Available without /proc/meminfo succeeded")
	}
	os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte("MemTotal: 4 kB\n"), 0o644)
	if _, err := Available(root); err == nil {
		t.Error("Available without a MemAvailable line succeeded")
	}
	os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte("MemAvailable: 4 kB\n"), 0o644)
	if n, err := Available(root); n != 4096 || err != nil {
		t.Errorf("Available = %d, %v; want 4096", n, err)
	}
}

func TestNodeFree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if _, err := NodeFree(root, 1); err == nil {
		t.Error("NodeFree without the node's meminfo succeeded")
	}
	dir := filepath.Join(root, "sys/devices/system/node/node1")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "meminfo"), []byte("Node 1 MemTotal: 64 kB\nNode 1 MemFree:  8 kB\nNode 1 Inactive(file): 4 kB\n"), 0o644)
	if n, err := NodeFree(root, 1); n != 12<<10 || err != nil {
		t.Errorf("NodeFree = %d, %v; want %d (free and inactive file pages)", n, err, 12<<10)
	}
}
