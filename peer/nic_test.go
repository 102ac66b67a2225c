package peer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/rdma/rdmatest"
)

// TestPickDevice picks RDMA ports on the sysfs fixture with mlx5_1 made
// active: the port nearest the GPU in use (mlx5_0 behind the same switch
// as 0000:1a:00.0; mlx5_1 under the root complex of 0000:af:00.0, though
// mlx5_0 is listed first), the first active port without a GPU, and a
// named device as named.
func TestPickDevice(t *testing.T) {
	t.Parallel()
	root := rdmatest.SysfsTree(t)
	if err := os.WriteFile(filepath.Join(root, "sys/class/infiniband/mlx5_1/ports/1/state"), []byte("4: ACTIVE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		device, gpu, want, why string
	}{
		{"", "0000:1a:00.0", "mlx5_0", "active port nearest GPU 0000:1a:00.0 (same switch)"},
		{rdma.AutoDevice, "0000:af:00.0", "mlx5_1", "active port nearest GPU 0000:af:00.0 (same root complex)"},
		{"", "", "mlx5_0", "first active port (no GPU in use)"},
		{"rxe0", "0000:1a:00.0", "rxe0", "named by --rdma-device"},
	} {
		cfg, why := PickDevice(rdma.Config{Device: tc.device, Root: root}, tc.gpu)
		if cfg.Device != tc.want || why != tc.why {
			t.Errorf("%q near %q: %s (%s), want %s (%s)", tc.device, tc.gpu, cfg.Device, why, tc.want, tc.why)
		}
	}
	cfg, why := PickDevice(rdma.Config{Root: t.TempDir()}, "0000:1a:00.0")
	if cfg.Device != "" || why != "first active port libibverbs lists (no active port in sysfs)" {
		t.Errorf("no sysfs: %q (%s)", cfg.Device, why)
	}
}
