// Package tierspec describes the tiers a reused KV prefix can be brought
// back from, without the code that brings it back: each tier's name, the
// other names it goes by (the HTTP probe's, the capacity plan's), its
// display order, the kind of cost it has, the directions it moves blocks
// in and how plans and reports show it. Each tier's description is one
// file here, registered from it; package tiers (which needs cgo) runs the
// tiers, and report, plots, analysis and the capacity plan iterate these
// descriptions instead of naming tiers. It is cgo-free.
package tierspec

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/kvtier/kvtier/registry"
	"github.com/kvtier/kvtier/results"
)

// A Direction is which way a tier moves a prefix's blocks.
type Direction string

// Directions: the values of --direction and of the rows' direction
// column.
const (
	// Load brings the blocks from the tier into the working pool (what a
	// hit costs).
	Load Direction = results.DirectionLoad
	// Store puts the blocks from the working pool into the tier (what
	// keeping them there costs).
	Store Direction = results.DirectionStore
)

// A Kind is what a tier's cost grows with, and so the cost model a plan
// fits to it.
type Kind int

// Kinds of cost.
const (
	// Fetch is a bandwidth-bound move of KV bytes: α + bytes/rate. Rows
	// carry bytes and GB/s and the data is verified.
	Fetch Kind = iota
	// Compute is the prefill computed again: α + FLOPs/rate; no KV bytes
	// move.
	Compute
)

// A Desc describes one tier.
type Desc struct {
	Name    string // the tier's name in --tiers and in the rows' tier column
	Summary string // one line for --help and kvtier info
	Order   int    // display order in tables and figures, fastest tier first
	// Aliases are the other names the tier goes by (the HTTP probe's,
	// the capacity plan's); Lookup resolves them.
	Aliases []string
	Kind    Kind
	// Directions are the directions the tier can move blocks in; nil
	// means Load only.
	Directions []Direction
	// Probe is the HTTP probe's name for the tier as a server serves it
	// (its rows' tier column); "" where the probe has none.
	Probe string
	// ProbeLabel names the probe's tier in figures' legends.
	ProbeLabel string
	// Plan says how a capacity plan shows the tier; nil where a plan has
	// no place for it.
	Plan *Plan
	// AllGPUs says the sweep's --gpu all runs the tier on every GPU at
	// once: its loads share a node's PCIe switches and host memory
	// bandwidth.
	AllGPUs bool
}

// A Plan is how a capacity plan (kvtier plan, trace's tables and
// figures) shows a tier.
type Plan struct {
	// Name is the tier's name in a plan: its capacity flag, the prefix
	// of its plan.csv columns (NAME_bytes, frac_NAME, ...), its entry in
	// the missing and store columns.
	Name  string
	Label string // the tier's capacity column header in tables
	Share string // the header of its column of the share of tokens served
	// Order is the serving order: a block the tiers before it cannot
	// hold spills into it.
	Order int
	// Capacities is the default of the tier's capacity flag and Usage
	// its help; a compute tier has no capacity and leaves both empty.
	Capacities, Usage string
}

// Moves reports whether the tier moves KV bytes (a fetch; recompute
// moves none).
func (d Desc) Moves() bool { return d.Kind == Fetch }

// Computes reports whether the tier computes the prefix again.
func (d Desc) Computes() bool { return d.Kind == Compute }

// Names returns the tier's name followed by the others it goes by.
func (d Desc) Names() []string { return append([]string{d.Name}, d.others()...) }

var (
	descs = registry.New("tier", func(d Desc) string { return d.Name },
		func(a, b Desc) int { return cmp.Compare(a.Order, b.Order) })
	mu     sync.Mutex
	others = map[string]string{} // alias, probe and plan names: the tier's name
)

// others returns every name of d but its own.
func (d Desc) others() []string {
	out := slices.Clone(d.Aliases)
	if d.Probe != "" {
		out = append(out, d.Probe)
	}
	if d.Plan != nil {
		out = append(out, d.Plan.Name)
	}
	var uniq []string
	for _, n := range out {
		if n != d.Name && !slices.Contains(uniq, n) {
			uniq = append(uniq, n)
		}
	}
	return uniq
}

// Register adds a tier's description and returns it; it is called from
// a package-level declaration in the tier's file. A name or alias that
// another tier already has is a programming error and panics.
func Register(d Desc) Desc {
	mu.Lock()
	defer mu.Unlock()
	for _, n := range append(d.others(), d.Name) {
		if o, ok := lookup(n); ok {
			panic(fmt.Sprintf("tierspec: %s of tier %s is already tier %s's", n, d.Name, o.Name))
		}
	}
	descs.Add(d)
	for _, n := range d.others() {
		others[n] = d.Name
	}
	return d
}

// All returns every tier's description in display order.
func All() []Desc { return descs.All() }

// Lookup returns the tier called name, by its name, an alias, its probe
// name or its plan name.
func Lookup(name string) (Desc, bool) {
	mu.Lock()
	defer mu.Unlock()
	return lookup(name)
}

func lookup(name string) (Desc, bool) {
	if n, ok := others[name]; ok {
		name = n
	}
	return descs.Lookup(name)
}

// Resolve returns the tier called name, or an error listing every name
// a tier goes by.
func Resolve(name string) (Desc, error) {
	if d, ok := Lookup(name); ok {
		return d, nil
	}
	var known []string
	for _, d := range All() {
		known = append(known, strings.Join(d.Names(), "/"))
	}
	return Desc{}, fmt.Errorf("unknown tier %q (known: %s)", name, strings.Join(known, ", "))
}

// Order returns the display order of the tier called name (any of its
// names), after every tier for a name no tier has.
func Order(name string) int {
	if d, ok := Lookup(name); ok {
		return d.Order
	}
	return math.MaxInt
}

// Computes reports whether name (any of a tier's names) is a tier that
// computes the prefix again.
func Computes(name string) bool {
	d, ok := Lookup(name)
	return ok && d.Computes()
}

// Probes returns the tiers the HTTP probe measures, slowest first (the
// order its tables and figures list them).
func Probes() []Desc {
	var out []Desc
	for _, d := range All() {
		if d.Probe != "" {
			out = append(out, d)
		}
	}
	slices.Reverse(out)
	return out
}

// ProbeNames returns the probe's names of Probes, slowest first.
func ProbeNames() []string {
	var out []string
	for _, d := range Probes() {
		out = append(out, d.Probe)
	}
	return out
}

// AllGPUNames returns the names of the tiers the sweep's --gpu all runs
// on every GPU at once (Desc.AllGPUs), in display order.
func AllGPUNames() []string {
	var out []string
	for _, d := range All() {
		if d.AllGPUs {
			out = append(out, d.Name)
		}
	}
	return out
}

// PlanTiers returns the tiers of a capacity plan in serving order:
// those with a capacity, then the compute tier that serves what none
// holds.
func PlanTiers() []Desc {
	var out []Desc
	for _, d := range All() {
		if d.Plan != nil {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b Desc) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Plan.Order, b.Plan.Order))
	})
	return out
}

// PlanNames returns the plan names of PlanTiers.
func PlanNames() []string {
	var out []string
	for _, d := range PlanTiers() {
		out = append(out, d.Plan.Name)
	}
	return out
}

// Capacities returns the plan tiers that hold blocks (every plan tier
// but the compute one), in serving order.
func Capacities() []Desc {
	return slices.DeleteFunc(PlanTiers(), Desc.Computes)
}

// CapacityNames returns the plan names of Capacities.
func CapacityNames() []string {
	var out []string
	for _, d := range Capacities() {
		out = append(out, d.Plan.Name)
	}
	return out
}
