// Package tiers holds the places a reused KV prefix can be brought back
// from and what brings it back: the Tier contract and registry with the
// tiers hbm, host, remote and recompute (one file each), and the Backend
// contract and registry with the host backend (a DRAM stand-in for the
// GPU) and the cuda backend. A tier does no timing and writes no rows;
// the harness's Sampler times it. The KV geometry and pool layouts it
// works on are package kv's.
package tiers

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/system"
)

// A Prefix is the reused prefix a Fetch brings back.
type Prefix struct {
	Tokens int // prefix length L
	Blocks int // ceil(L / block size)
}

// Env is what a tier is built from: the backend, the geometry, and the
// options of the sweep that concern tiers.
type Env struct {
	Backend  Backend
	Geometry kv.Geometry
	Layout   kv.Layout
	Copy     CopyMode // how chunk copies are issued
	HostMem  MemKind  // Pinned or Pageable, for the host tier
	Seed     uint64   // block placement

	// Remote tier.
	Peer       string           // HOST:PORT of a kvtier serve peer; "" starts an embedded loopback peer
	Transport  string           // "tcp" or "verbs"
	Conns      int              // parallel TCP connections or RC QPs
	RDMADevice string           // e.g. mlx5_0; "" picks the first active port
	GIDIndex   int              // -1 selects a RoCE v2 GID automatically
	Libs       system.Libraries // native libraries (libibverbs) to load

	Log io.Writer // progress and warnings; never rows
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
	// tokens) into the working pool. Under Queued timing it only enqueues.
	Fetch(ctx context.Context, p Prefix) error
	// Verify checks the working pool against the source after a Fetch of p;
	// a mismatch is an error naming the first bad block and chunk. Tiers
	// that move no data return nil.
	Verify(p Prefix) error
	// Attrs describes how the tier ran, as row columns: "transport" (goes to
	// the transport column), "copy", "mem", "path", "device", ...
	Attrs() map[string]string
	// Work returns the FLOPs of a Fetch of p, for tiers that compute; 0 else.
	Work(p Prefix) float64
	Close() error
}

// A Spec registers a tier.
type Spec struct {
	Name    string // "hbm", "host", "remote", "recompute"
	Summary string // one line for --help and kvtier info
	Order   int    // display order, fastest tier first
	// Moves says the tier moves KV bytes: rows carry bytes and GB/s and the
	// data is verified. Recompute moves none.
	Moves  bool
	Timing Timing
	New    func(env Env) Tier
}

var (
	tierMu sync.Mutex
	specs  = map[string]Spec{}
)

// Register adds a tier; it is called from init functions.
func Register(s Spec) {
	tierMu.Lock()
	defer tierMu.Unlock()
	if _, dup := specs[s.Name]; dup {
		panic("tiers: tier " + s.Name + " registered twice")
	}
	specs[s.Name] = s
}

// All returns every registered tier in display order.
func All() []Spec {
	tierMu.Lock()
	defer tierMu.Unlock()
	out := make([]Spec, 0, len(specs))
	for _, s := range specs {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Names returns the registered tier names in display order.
func Names() []string {
	var n []string
	for _, s := range All() {
		n = append(n, s.Name)
	}
	return n
}

// Lookup returns the tier named name.
func Lookup(name string) (Spec, error) {
	tierMu.Lock()
	s, ok := specs[name]
	tierMu.Unlock()
	if !ok {
		return Spec{}, fmt.Errorf("unknown tier %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// A Sizer is a tier that can say how many bytes of host memory its Setup
// for maxBlocks blocks allocates, so the harness can skip a configuration
// that would not fit instead of running the machine out of memory.
type Sizer interface {
	SetupBytes(maxBlocks int) int64
}

// A Scrubber is a tier whose working pool can be overwritten before a
// verified sample, so that verification sees what that sample fetched
// rather than what an earlier one left. Scrub(p) overwrites at least what
// a Fetch of p writes and Verify(p) reads; it is never timed.
type Scrubber interface {
	Scrub(p Prefix) error
}
