package tiers

// NUMANode is the NUMA node host pools are bound to: --numa's, or with
// NUMAAuto the GPU's; -1 where placement is left to the kernel.
func (b *CUDABackend) NUMANode() int { return b.cfg.NUMA }
