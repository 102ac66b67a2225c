package tierspec

// Disk is a file on a local disk.
var Disk = Register(Desc{
	Name:       "disk",
	Summary:    "read of the prefix's blocks from a file on a local disk (O_DIRECT by io_uring or pread, or cuFile into GPU memory) into the working pool; store: the writes, with or without fdatasync",
	Order:      3, // after remote, before recompute
	Kind:       Fetch,
	Directions: []Direction{Load, Store},
	Plan: &Plan{Name: "disk", Label: "disk", Share: "disk %", Order: 2,
		Capacities: "0", Usage: "local disk KV capacities (0: none, inf: unbounded)"},
})
