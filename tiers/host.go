package tiers

func init() {
	Register(Spec{
		Name:    "host",
		Summary: "copy of the prefix's blocks from a pinned (or pageable) host pool into the working pool (PCIe H2D)",
		Order:   1,
		Moves:   true,
		Timing:  Queued,
		New: func(env Env) Tier {
			kind := env.HostMem
			if kind == "" {
				kind = Pinned
			}
			// On the host backend the working pool is DRAM too: the row's
			// path column says so (dram-to-dram), the device column names
			// the CPU stand-in.
			return &gatherTier{env: env, srcKind: kind, name: "host"}
		},
	})
}
