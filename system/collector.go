// Package system describes the machine a run measures on. Collectors
// (host facts here; GPUs in package cuda; RDMA NICs in package rdma)
// register themselves and fill a results.Manifest; kvtier info prints the
// same manifest. Every sysfs and procfs read goes through one root path
// so tests can point collectors at a fixture tree.
package system

import (
	"cmp"
	"fmt"

	"github.com/kvtier/kvtier/registry"
	"github.com/kvtier/kvtier/results"
)

// A Collector adds what it knows to a manifest. Collect must not fail the
// run for a missing device or library: it records that as a BackendStatus
// with a reason and returns nil. An error means the collector itself broke.
type Collector struct {
	Name    string
	Order   int // host first, then GPUs, then NICs
	Collect func(root string, m *results.Manifest) error
}

var collectors = registry.New("collector", func(c Collector) string { return c.Name },
	func(a, b Collector) int { return cmp.Compare(a.Order, b.Order) })

// Register adds a collector; it is called from init functions.
func Register(c Collector) { collectors.Add(c) }

// Collect runs every registered collector against the filesystem rooted
// at root ("/" on a live machine) and returns what broke; the manifest
// keeps whatever the others found.
func Collect(root string, m *results.Manifest) []error {
	var errs []error
	for _, c := range collectors.All() {
		if err := c.Collect(root, m); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
		}
	}
	return errs
}
