package tiers

import "github.com/kvtier/kvtier/diskio"

// GDS says where libcufile is and how cuFile's calls make the backend's
// context current, for GPUDirect Storage reads into its device memory.
func (b *CUDABackend) GDS() (lib string, ctx diskio.DeviceContext) {
	set, c := b.ctx.Current()
	return b.cfg.LibCUFile, diskio.DeviceContext{SetCurrent: set, Ctx: c}
}
