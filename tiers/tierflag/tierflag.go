// Package tierflag holds the flag groups of the tiers' backends: --backend,
// --gpu and --numa (BackendFlags, BackendGroup), the native libraries the
// backends and the manifest's facts load (LibraryGroup, Libraries), and
// --direction; with what the commands that take them share: opening the
// backends those flags name, and a peer's pool. It sits beside package
// tiers, as the go command keeps AddBuildFlags beside its build, so that
// package cli, and the suites that move no device bytes, link no backend.
package tierflag

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/cuda"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/tiers"
)

// BackendGroup is --backend, --gpu and --numa: which backend measures.
var BackendGroup = cli.NewGroup(cli.FlagGroup{Name: "backend", Heading: "Backend", Order: 50})

// MaxOrdinal bounds a GPU ordinal (--gpu) and a NUMA node (--numa).
const MaxOrdinal = 1023

// BackendFlags are --backend, --gpu and --numa: which backend measures.
type BackendFlags struct {
	Name      string
	GPU, NUMA int
	All       bool // --gpu all (kvtier sweep: every GPU at once)
	// Root is where sysfs is read to check --numa's node ("" is "/"; a
	// test's fixture otherwise).
	Root string
}

// Add adds the group's flags to fs.
func (f *BackendFlags) Add(fs *pflag.FlagSet) { BackendGroup.Bind(fs, f.add) }

func (f *BackendFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.Name, "backend", "auto", "compute backend: auto, "+strings.Join(tiers.BackendNames(), ", ")+" (auto picks the best that opens and says why the others did not)")
	fs.Var(&gpuFlag{&f.GPU, &f.All}, "gpu", "CUDA device ordinal, or all: the host and hbm tiers on every GPU at once, with per-GPU and aggregate rows")
	f.NUMA = tiers.NUMAAuto
	fs.Var((*NUMAFlag)(&f.NUMA), "numa", "NUMA node for host pools: auto (the GPU's node), a node, or -1 (left to the kernel)")
}

// gpuFlag is --gpu of kvtier sweep: an ordinal, or "all".
type gpuFlag struct {
	n   *int
	all *bool
}

func (g *gpuFlag) String() string {
	if g.n == nil {
		return "0"
	}
	if *g.all {
		return "all"
	}
	return strconv.Itoa(*g.n)
}

func (g *gpuFlag) Set(s string) error {
	if s == "all" {
		*g.n, *g.all = 0, true
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a GPU ordinal or all, got %q", s)
	}
	*g.n, *g.all = v, false
	return nil
}

func (g *gpuFlag) Type() string { return "ordinal|all" }

// NUMAFlag is --numa: "auto" (tiers.NUMAAuto), a node, or -1.
type NUMAFlag int

func (n *NUMAFlag) String() string {
	if *n == tiers.NUMAAuto {
		return "auto"
	}
	return strconv.Itoa(int(*n))
}

// Set parses auto, -1 or a node.
func (n *NUMAFlag) Set(s string) error {
	if s == "auto" {
		*n = tiers.NUMAAuto
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < -1 || v > MaxOrdinal {
		return fmt.Errorf("want auto, -1 or a node 0 to %d, got %q", MaxOrdinal, s)
	}
	*n = NUMAFlag(v)
	return nil
}

// Type names the flag's values in -h.
func (n *NUMAFlag) Type() string { return "auto|node" }

// Validate reports an unknown backend, an ordinal out of range and a
// NUMA node this machine does not have (its pools would land wherever
// the kernel put them, with no row saying so).
func (f *BackendFlags) Validate() error {
	var errs []error
	if f.Name != "auto" && !slices.Contains(tiers.BackendNames(), f.Name) {
		errs = append(errs, option.Errorf("backend", "unknown backend %q (known: auto, %s)", f.Name, strings.Join(tiers.BackendNames(), ", ")))
	}
	errs = append(errs, option.Range("gpu", f.GPU, 0, MaxOrdinal), option.Range("numa", f.NUMA, tiers.NUMAAuto, MaxOrdinal, "-1: left to the kernel"))
	if has, known := system.HasNUMANode(cmp.Or(f.Root, "/"), f.NUMA); f.NUMA >= 0 && known && !has {
		errs = append(errs, option.Errorf("numa", "this machine has no NUMA node %d (it has %d; -1 leaves placement to the kernel)", f.NUMA, system.NUMANodes(cmp.Or(f.Root, "/"))))
	}
	return errors.Join(errs...)
}

// Config returns the configuration backends open with: this group's
// device and node, the native libraries libs, and log.
func (f *BackendFlags) Config(log io.Writer, libs system.Libraries) tiers.BackendConfig {
	return tiers.BackendConfig{GPU: f.GPU, NUMA: f.NUMA, Log: log, LibCUDA: libs.CUDA, LibCUBLAS: libs.CUBLAS, LibCUFile: libs.CUFile, CUBLASDirs: libs.CUBLASDirs}
}

// DirectionUsage is the one meaning of --direction (sweep, transfer, mesh).
const DirectionUsage = "comma-separated directions: load (bring KV back from the tier or peer) and store (put it there)"

// ParseDirection parses one value of --direction.
func ParseDirection(s string) (tiers.Direction, error) {
	return tiers.ParseDirection(strings.TrimSpace(s))
}

// OpenBackends opens the backend f names: one, or with --gpu all one per
// GPU the driver sees, in ordinal order. why says why backends auto
// passed over did not open. Its errors are option errors naming the flag
// at fault.
func OpenBackends(ctx context.Context, f *BackendFlags, cfg tiers.BackendConfig) (bs []tiers.Backend, why []string, err error) {
	b, why, err := tiers.OpenBackend(ctx, f.Name, cfg)
	if err != nil {
		return nil, why, option.Wrap("backend", err)
	}
	bs = []tiers.Backend{b}
	if !f.All {
		return bs, why, nil
	}
	counter, ok := b.(interface{ DeviceCount() (int, error) })
	if !ok {
		CloseAll(bs, cfg.Log)
		return nil, why, option.Errorf("gpu", "all spreads the tiers over GPUs, and the %s backend has none", b.Name())
	}
	n, err := counter.DeviceCount()
	for i := 1; err == nil && i < n; i++ {
		cfg.GPU = i
		var bi tiers.Backend
		if bi, _, err = tiers.OpenBackend(ctx, b.Name(), cfg); err == nil {
			bs = append(bs, bi)
		}
	}
	if err != nil {
		CloseAll(bs, cfg.Log)
		return nil, why, option.Wrap("gpu", fmt.Errorf("all: %w", err))
	}
	return bs, why, nil
}

// UnusedGPU says why --gpu does not apply to b, a backend without GPUs
// (the host one, which auto falls back to), or "" where it does or was
// not given: a --gpu 3 the run cannot honour is said, not dropped.
func (f *BackendFlags) UnusedGPU(b tiers.Backend) string {
	if _, ok := b.(interface{ DeviceCount() (int, error) }); ok || f.GPU == 0 {
		return ""
	}
	return fmt.Sprintf("--gpu %d not used: the %s backend has no GPUs", f.GPU, b.Name())
}

// CloseAll closes every backend of bs, warning of failures on log.
func CloseAll(bs []tiers.Backend, log io.Writer) {
	for _, b := range bs {
		if err := b.Close(); err != nil {
			fmt.Fprintf(log, "kvtier: warning: %v\n", err)
		}
	}
}

// GPUBus is the PCI bus id of b's GPU when inUse and b is a GPU backend,
// "" otherwise: what --rdma-device auto picks the nearest port to.
func GPUBus(b tiers.Backend, inUse bool) string {
	if g, ok := b.(interface{ Info() cuda.DeviceInfo }); ok && inUse {
		return g.Info().BusID
	}
	return ""
}
