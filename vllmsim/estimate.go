package vllmsim

// EstimateTTFT is the time to first token that a server of cfg would
// model for a prompt of prompt tokens whose reusable prefix sits in tier
// ("miss", "gpu", "cpu" or "remote"), beside decodes sequences decoding:
// the engine's cost model in closed form, without starting a server. It
// lets a caller say how long a run against the simulator will take
// before it starts; it returns 0 when cfg is not valid.
func EstimateTTFT(cfg Config, tier string, prompt, decodes int) float64 {
	if cfg.setDefaults() != nil {
		return 0
	}
	c := newCostModel(cfg.Geometry, cfg.Profile)
	return c.estimateTTFT(tier, prompt, cfg.BlockSize, cfg.MaxNumBatchedTokens, decodes)
}
