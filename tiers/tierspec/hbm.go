package tierspec

// HBM is the GPU's own memory: vLLM's prefix cache.
var HBM = Register(Desc{
	Name:       "hbm",
	Summary:    "gather of the prefix's blocks from a device pool into the working pool (device to device); store: the scatter back",
	Order:      0,
	Aliases:    []string{"gpu"},
	Kind:       Fetch,
	Directions: []Direction{Load, Store},
	Probe:      "gpu",
	ProbeLabel: "GPU hit",
	AllGPUs:    true,
	Plan: &Plan{Name: "hbm", Label: "HBM", Share: "hbm %", Order: 0,
		Capacities: "40GiB,80GiB", Usage: "GPU KV capacities to plan"},
})
