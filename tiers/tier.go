// Package tiers holds the places a reused KV prefix can be brought back
// from and what brings it back: the Tier contract and registry, each tier
// one file that registers itself with its own options and columns (its
// description, what the rest of kvtier knows of it, in tierspec), and the
// Backend
// contract and registry with the host backend (a DRAM stand-in for the
// GPU) and the cuda backend. A tier does no timing and writes no rows;
// the harness's Sampler times it. The KV geometry and pool layouts it
// works on are package kv's.
package tiers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/registry"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// A Direction is which way a tier moves a prefix's blocks.
type Direction = tierspec.Direction

// Directions: the values of --direction and of the rows' direction
// column.
const (
	Load  = tierspec.Load  // bring the blocks back from the tier (what a hit costs)
	Store = tierspec.Store // put them into the tier (what keeping them there costs)
)

// CheckDirections reports, as option errors of the direction flag, an
// empty list or a value that is not a direction.
func CheckDirections(ds []Direction) error {
	if len(ds) == 0 {
		return option.Errorf("direction", "no direction given")
	}
	var errs []error
	for _, d := range ds {
		if _, err := ParseDirection(string(d)); err != nil {
			errs = append(errs, option.Wrap("direction", err))
		}
	}
	return errors.Join(errs...)
}

// Directions lists the directions in display order.
func Directions() []Direction { return []Direction{Load, Store} }

// RunOrder returns the directions of ds to run, load first, each once;
// none given means load.
func RunOrder(ds []Direction) []Direction {
	var out []Direction
	for _, d := range Directions() {
		if slices.Contains(ds, d) {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return []Direction{Load}
	}
	return out
}

// ParseDirection returns the direction named s.
func ParseDirection(s string) (Direction, error) {
	for _, d := range Directions() {
		if string(d) == s {
			return d, nil
		}
	}
	return "", fmt.Errorf("unknown direction %q (known: load, store)", s)
}

// A Prefix is the reused prefix a Fetch brings back.
type Prefix struct {
	Tokens int // prefix length L
	Blocks int // ceil(L / block size)
}

// Env is what a tier is built from: the backend, the geometry, the
// layout and copy mode of the configuration, and the tier's own options.
type Env struct {
	Backend  Backend
	Geometry kv.Geometry
	Layout   kv.Layout
	Copy     CopyMode // how chunk copies are issued
	// Direction is which way Fetch moves the blocks: Load ("" too) or
	// Store, for a tier whose Spec lists it.
	Direction Direction
	Seed      uint64 // block placement and the data pattern
	// Options are the tier's own options as its Spec's NewOptions made
	// them and the command line set them; nil for a tier without any,
	// or to take the defaults.
	Options Options
	// Root is the root of sysfs and procfs reads ("/" on a live machine).
	Root string
	Log  io.Writer // progress and warnings; never rows
	// Scratch is a directory on the results directory's filesystem where
	// a tier may keep large files for the run (the disk tier's data file
	// by default); "" where the run has none.
	Scratch string
	// Shared holds what tiers keep across the configurations of one run
	// (the disk tier's data file, written once), closed when the run
	// ends; nil makes each tier own everything it makes.
	Shared *Shared
}

// Options are a tier's own settings. The tier declares them, so the
// command line offers them as flags, the manifest records them and a new
// tier needs no edits in the harness or the CLI.
type Options interface {
	// Fields lists the options for the command line; each points at its
	// value, which holds the default.
	Fields() []option.Field
	// Validate reports every problem at once as option.Errors naming the
	// fields.
	Validate() error
	// Settings renders the options for the manifest, keyed by field.
	Settings() map[string]string
}

// A Tier brings a prefix's KV blocks back into the working pool from one
// place. A tier does no timing and writes no rows: the harness owns
// warm-up, samples, verification and aggregation.
type Tier interface {
	// Available returns "" when the tier can run in its Env, else the reason
	// its rows are skipped (e.g. "no device memory on the host backend").
	Available() string
	// Setup prepares pools for prefixes of up to maxBlocks blocks, placed at
	// random slots and filled with a verifiable pattern.
	Setup(ctx context.Context, maxBlocks int) error
	// Fetch brings the first p.Blocks placed blocks (or recomputes p.Tokens
	// tokens) into the working pool; in the Store direction it puts them
	// from the working pool into the tier's slots. Under Queued timing it
	// only enqueues.
	Fetch(ctx context.Context, p Prefix) error
	// Verify checks the destination (the working pool for a load, the
	// tier's pool, file or peer, read back, for a store) against the
	// source after a Fetch of p; a mismatch is an error naming the first
	// bad block and chunk. Tiers that move no data return nil.
	Verify(p Prefix) error
	// Attrs describes how the tier ran, as row columns: "transport" (goes to
	// the transport column), "copy", "mem", "path", "device", ...
	Attrs() map[string]string
	// Work returns the FLOPs of a Fetch of p, for tiers that compute; 0 else.
	Work(p Prefix) float64
	Close() error
}

// A Spec registers a tier: its description (name, order, aliases, cost
// kind, directions, how plans and reports show it: package tierspec, so
// that what only reads results needs no cgo) and what runs it.
type Spec struct {
	tierspec.Desc
	Timing Timing
	New    func(env Env) Tier
	// NewOptions returns the tier's options with their defaults; nil when
	// the tier has none.
	NewOptions func() Options
	// Columns are the row columns the tier's Attrs may set beyond those
	// every sweep row has; the sweep's file carries the union over all
	// tiers, so no attribute is dropped. Each is declared with its type,
	// unit and meaning, as every results column is.
	Columns []results.Column
	// Prepares says what Setup waits for, for the run's progress ("the
	// file to be written"); "" for its pools.
	Prepares string
}

// Has reports whether the tier can move blocks in direction d.
func (s Spec) Has(d Direction) bool {
	if d == "" || d == Load {
		return s.Directions == nil || slices.Contains(s.Directions, Load)
	}
	return slices.Contains(s.Directions, d)
}

// NoDirectionReason is the reason of the skipped rows of a tier that
// cannot move blocks in direction d.
func (s Spec) NoDirectionReason(d Direction) string {
	if d == Store && !s.Moves() {
		return fmt.Sprintf("nothing to store: %s moves no KV bytes (it computes them again)", s.Name)
	}
	return fmt.Sprintf("tier %s has no %s direction", s.Name, d)
}

// stores reports whether env asks for the Store direction.
func (e Env) stores() bool { return e.Direction == Store }

// reversed returns plan with every copy's source and destination swapped:
// a load's plan run the other way is the store of the same chunks.
func reversed(plan []kv.Copy) []kv.Copy {
	out := make([]kv.Copy, len(plan))
	for i, c := range plan {
		out[i] = kv.Copy{Src: c.Dst, Dst: c.Src, Bytes: c.Bytes}
	}
	return out
}

var specs = registry.New("tier", func(s Spec) string { return s.Name },
	func(a, b Spec) int { return cmp.Compare(a.Order, b.Order) })

// Register adds a tier; it is called from init functions.
func Register(s Spec) { specs.Add(s) }

// All returns every registered tier in display order.
func All() []Spec { return specs.All() }

// Names returns the registered tier names in display order.
func Names() []string { return specs.Names() }

// Lookup returns the tier called name, by any name it goes by
// (tierspec.Lookup: its name, an alias, the probe's or the plan's).
func Lookup(name string) (Spec, error) {
	if d, ok := tierspec.Lookup(name); ok {
		name = d.Name
	}
	s, ok := specs.Lookup(name)
	if !ok {
		return Spec{}, fmt.Errorf("unknown tier %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// PeerOptions are tier Options that reach a kvtier serve peer (the
// remote tier's): the command line checks the peer answers before a run
// and fills in the settings that are not the tier's flags, the run token
// and the libibverbs to load.
type PeerOptions interface {
	Options
	PeerAddr() string // HOST:PORT; "" for a peer the tier starts itself
	PeerSettings() *peer.ClientSettings
}

// OptionsOf returns the options in env when they are of type T, else the
// defaults from newDefault: the one way a tier reads its own options.
func OptionsOf[T Options](env Env, newDefault func() T) T {
	if o, ok := env.Options.(T); ok {
		return o
	}
	return newDefault()
}

// root returns env's sysfs root, "/" when unset.
func root(env Env) string {
	if env.Root == "" {
		return "/"
	}
	return env.Root
}

// A Sizer is a tier that can say how many bytes of host memory its Setup
// for maxBlocks blocks allocates, so the harness can skip a configuration
// that would not fit instead of running the machine out of memory.
type Sizer interface {
	SetupBytes(maxBlocks int) int64
}

// A Fitter is a tier whose Setup needs room beyond host memory (the disk
// tier's file on a filesystem): FitReason returns "" when a Setup for
// maxBlocks blocks fits, else the reason its rows are skipped.
type Fitter interface {
	FitReason(maxBlocks int) string
}

// A Limiter is a tier with a fixed limit set by its options (the disk
// tier's --disk-max): LimitReason returns "" when a Setup for maxBlocks
// blocks is within it, else the reason its rows are skipped. It reads
// nothing of the machine, so it is known before anything runs.
type Limiter interface {
	LimitReason(maxBlocks int) string
}

// A Preparer is a tier with a state to restore before every sample,
// untimed: Prepare(p) runs before each Fetch of p that is timed (the disk
// tier checks its file is whole and drops its pages from the page cache,
// so that no sample is served from memory by accident).
type Preparer interface {
	Prepare(p Prefix) error
}

// A DirectionVarier is tier Options whose configurations depend on the
// direction (the disk tier's --sync applies to stores only).
type DirectionVarier interface {
	VariantsFor(d Direction) []Variant
}

// VariantsFor returns the configurations o asks for in direction d: its
// VariantsFor when it is a DirectionVarier, else VariantsOf(o).
func VariantsFor(o Options, d Direction) []Variant {
	if v, ok := o.(DirectionVarier); ok {
		return v.VariantsFor(d)
	}
	return VariantsOf(o)
}

// A Variant is one configuration among several that a tier's options ask
// for (the disk tier's --io uring,pread asks for two).
type Variant struct {
	Name    string  // short, for progress lines and benchmark names: "uring"
	Options Options // the options of this configuration alone
}

// A Varier is tier Options that ask for several configurations; the
// sweep and the benchmarks measure each as a configuration of its own.
type Varier interface {
	Variants() []Variant
}

// VariantsOf returns the configurations o asks for: its Variants when it
// is a Varier, else o alone with no name.
func VariantsOf(o Options) []Variant {
	if v, ok := o.(Varier); ok {
		return v.Variants()
	}
	return []Variant{{Options: o}}
}

// A Scrubber is a tier whose working pool can be overwritten before a
// verified sample, so that verification sees what that sample fetched
// rather than what an earlier one left. Scrub(p) overwrites at least what
// a Fetch of p writes and Verify(p) reads; it is never timed.
type Scrubber interface {
	Scrub(p Prefix) error
}

// release frees *p with free unless it is nil, records the error in
// errs and forgets *p, so that a second close frees nothing twice.
func release[T any](errs *[]error, p **T, free func(*T) error) {
	if *p != nil {
		*errs = append(*errs, free(*p))
		*p = nil
	}
}

// closeOnce closes each of cs that is set and clears it, so that a
// second Close finds nothing to close, adding each error to errs.
func closeOnce[C interface {
	comparable
	io.Closer
}](errs *[]error, cs ...*C) {
	var none C
	for _, c := range cs {
		if *c != none {
			*errs = append(*errs, (*c).Close())
			*c = none
		}
	}
}
