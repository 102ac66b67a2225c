// Package system describes the machine a run measures on. Collectors
// (host, GPUs through NVML or the CUDA driver, RDMA NICs through rdmamap
// and sysfs) register themselves and fill a results.Manifest; kvtier info
// prints the same manifest. Every sysfs and procfs read goes through one
// root path so tests can point collectors at a fixture tree, and the
// native libraries a collector loads are named by the caller's Config.
package system

import (
	"cmp"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kvtier/kvtier/registry"
	"github.com/kvtier/kvtier/results"
)

// A Config says where collectors look.
type Config struct {
	Root string    // root of procfs and sysfs reads: "/" on a live machine
	Libs Libraries // the native libraries to load
	// NVML is the NVML to ask; nil is go-nvml loading Libs.NVML. Tests
	// set go-nvml's mock here.
	NVML nvml.Interface
}

// Libraries names the native libraries kvtier loads at run time; "" takes
// the usual sonames. Each path is loaded once per process (packages cuda
// and rdma keep them) and never unloaded. cmd/kvtier fills it from
// KVTIER_LIBCUDA, KVTIER_LIBCUBLAS, KVTIER_LIBIBVERBS, KVTIER_LIBCUFILE
// and KVTIER_LIBNVML.
type Libraries struct {
	CUDA    string // libcuda; "" is libcuda.so.1
	CUBLAS  string // libcublas; "" picks the soname by the driver's major version
	IBVerbs string // libibverbs; "" is libibverbs.so.1, then libibverbs.so
	CUFile  string // libcufile (GPUDirect Storage); "" is libcufile.so.0, then libcufile.so
	NVML    string // libnvidia-ml, to list GPUs; "" is libnvidia-ml.so.1
	// CUBLASDirs lists where to look for libcublas when no soname loads
	// (CUBLASDirs of PythonSitePackages); nil: nowhere else.
	CUBLASDirs func() ([]string, error)
}

// A Collector adds what it knows to a manifest. Collect must not fail the
// run for a missing device or library: it records that as a BackendStatus
// with a reason and returns nil. An error means the collector itself broke.
type Collector struct {
	Name    string
	Order   int // host first, then GPUs, then NICs
	Collect func(c Config, m *results.Manifest) error
}

var collectors = registry.New("collector", func(c Collector) string { return c.Name },
	func(a, b Collector) int { return cmp.Compare(a.Order, b.Order) })

// Register adds a collector; it is called from init functions.
func Register(c Collector) { collectors.Add(c) }

// Collect runs every registered collector as c says (c.Root "" means "/")
// and returns what broke; the manifest keeps whatever the others found.
func Collect(c Config, m *results.Manifest) []error {
	if c.Root == "" {
		c.Root = "/"
	}
	var errs []error
	for _, col := range collectors.All() {
		if err := col.Collect(c, m); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", col.Name, err))
		}
	}
	return errs
}
