package tierflag

import (
	"context"

	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/tiers"
)

// A Pool says what pool a peer serves: kvtier serve's and each rank of
// kvtier mesh.
type Pool struct {
	Mem     string              // peer.HostMem or peer.GPUMem
	Size    int64               // bytes
	Seed    uint64              // of the data pattern
	Backend tiers.BackendConfig // the cuda backend's, for GPUMem
}

// Open fills the pool with the pattern: anonymous host memory, or device
// memory of the cuda backend (exportable as a DMA-BUF where the backend
// can) for GPUMem. gpuBus is the PCI bus id of the pool's GPU ("" for
// host memory), for --rdma-device auto.
func (o Pool) Open(ctx context.Context) (p *peer.Pool, gpuBus string, done func(), err error) {
	if o.Mem != peer.GPUMem {
		p, err := peer.NewHostPool(o.Size, o.Seed)
		return p, "", func() { p.Close() }, option.Wrap("pool", err)
	}
	b, _, err := tiers.OpenBackend(ctx, "cuda", o.Backend)
	if err != nil {
		return nil, "", nil, option.Wrap("mem", err)
	}
	gpuBus = GPUBus(b, true)
	buf, err := b.Alloc(tiers.Device, o.Size)
	if err != nil {
		b.Close()
		return nil, "", nil, option.Wrap("mem", err)
	}
	var export func() (int, int64, error)
	if exp, ok := b.(tiers.DMABufExporter); ok {
		export = func() (int, int64, error) { return exp.ExportDMABuf(buf) }
	}
	p, err = peer.NewBufferPool(buf, peer.GPUMem, export, o.Seed)
	if err != nil {
		buf.Close()
		b.Close()
		return nil, "", nil, err
	}
	if f, ok := b.(tiers.GPUDirectFlusher); ok {
		p.SetGPUDirectFlush(f.FlushGPUDirectWrites)
	}
	return p, gpuBus, func() { p.Close(); b.Close() }, nil
}
