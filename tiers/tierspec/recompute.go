package tierspec

// Recompute keeps nothing: the prefix's prefill is computed again (a
// miss).
var Recompute = Register(Desc{
	Name:       "recompute",
	Summary:    "the prefill GEMMs and attention of the model for the prefix (nothing is fetched)",
	Order:      4,
	Aliases:    []string{"miss"},
	Kind:       Compute,
	Probe:      "miss",
	ProbeLabel: "miss (recompute)",
	Plan:       &Plan{Name: "recompute", Share: "recomputed %"},
})
