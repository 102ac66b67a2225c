package tierspec

// Host is the host's DRAM: pinned (or pageable) memory across PCIe.
var Host = Register(Desc{
	Name:       "host",
	Summary:    "copy of the prefix's blocks from a pinned (or pageable) host pool into the working pool (PCIe H2D); store: D2H into the host pool",
	Order:      1,
	Aliases:    []string{"cpu", "dram"},
	Kind:       Fetch,
	Directions: []Direction{Load, Store},
	Probe:      "cpu",
	ProbeLabel: "CPU hit",
	AllGPUs:    true,
	Plan: &Plan{Name: "dram", Label: "DRAM", Share: "dram %", Order: 1,
		Capacities: "0,512GiB,2TiB", Usage: "host DRAM KV capacities (0: none)"},
})
