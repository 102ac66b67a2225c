package tiers

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kvtier/kvtier/cuda/cudatest"
)

// TestCUDABackendNUMAAuto: with NUMAAuto host pools go to the GPU's NUMA
// node as sysfs gives it; where sysfs does not say, to the kernel's
// choice; a node given stays.
func TestCUDABackendNUMAAuto(t *testing.T) {
	libs := cudatest.Build(t)
	root := t.TempDir()
	dev := filepath.Join(root, "sys/bus/pci/devices/0000:19:00.0") // the fake's GPU 0
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dev, "numa_node"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		numa int
		root string
		want int
	}{{NUMAAuto, root, 1}, {NUMAAuto, t.TempDir(), -1}, {0, root, 0}, {-1, root, -1}} {
		b, err := OpenCUDA(BackendConfig{NUMA: c.numa, Root: c.root, LibCUDA: libs.CUDA})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.(*CUDABackend).NUMANode(); got != c.want {
			t.Errorf("NUMA %d under %s: node %d, want %d", c.numa, c.root, got, c.want)
		}
		b.Close()
	}
}
