package tierspec

// Remote is a peer's memory, another process or node, across the network.
var Remote = Register(Desc{
	Name:       "remote",
	Summary:    "read of the prefix's blocks from a peer's pool (RDMA READ over verbs, or TCP) into the working pool; store: a TCP push into the pool",
	Order:      2,
	Kind:       Fetch,
	Directions: []Direction{Load, Store},
	Probe:      "remote",
	ProbeLabel: "remote hit",
	Plan: &Plan{Name: "remote", Label: "remote", Share: "remote %", Order: 3,
		Capacities: "0", Usage: "remote KV store capacities (0: none, inf: unbounded)"},
})
