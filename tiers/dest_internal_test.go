package tiers

import (
	"testing"

	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/peer"
)

// TestDestFlushesGPUDirectWrites: verifying reads that came by GPUDirect
// flushes them first where the device reports no GPUDirect write
// ordering, and only there and only on that path.
func TestDestFlushesGPUDirectWrites(t *testing.T) {
	for _, c := range []struct {
		ordering, path string
		want           int64
	}{
		{"0", peer.DestGPUDirect, 1},
		{"100", peer.DestGPUDirect, 0},
		{"0", peer.DestBounce, 0},
	} {
		t.Run(c.ordering+"/"+c.path, func(t *testing.T) {
			t.Setenv("FAKECUDA_GDR_ORDERING", c.ordering)
			libs := cudatest.Build(t)
			b, err := OpenCUDA(BackendConfig{NUMA: -1, LibCUDA: libs.CUDA})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			dst, err := b.Alloc(Device, 1<<16)
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			src := make([]byte, 1<<16)
			pattern.Fill(src, 7, 0)
			if _, err := dst.WriteAt(src, 0); err != nil {
				t.Fatal(err)
			}
			d := &Dest{Destination: &peer.Destination{Path: c.path}, b: b, dst: dst}
			if i, err := d.Verify([]peer.Chunk{{Dst: 0, Src: 0, Len: 1 << 16}}, 7); err != nil {
				t.Fatalf("verify: chunk %d: %v", i, err)
			}
			if n, err := cudatest.GPUDirectFlushes(libs); err != nil || n != c.want {
				t.Errorf("flushes = %d, %v; want %d", n, err, c.want)
			}
		})
	}
}
