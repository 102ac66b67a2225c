package tiers

import (
	"errors"

	"github.com/kvtier/kvtier/cuda"
)

// FlushGPUDirectWrites flushes the GPUDirect RDMA writes into the GPU
// (cuFlushGPUDirectRDMAWrites) where the device reports no ordering of
// them; where it orders them, or the driver predates the flush (CUDA
// 11.3), it does nothing.
func (b *CUDABackend) FlushGPUDirectWrites() error {
	if !b.info.NeedsGPUDirectFlush() {
		return nil
	}
	err := b.ctx.FlushGPUDirectWrites()
	if errors.Is(err, cuda.ErrUnsupported) {
		return nil
	}
	return err
}
