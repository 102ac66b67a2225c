package sweep

import (
	"context"
	"fmt"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// A Config is one configuration of a sweep: a tier in a layout, copy
// mode and variant of its options on a backend. Tiers that move no bytes
// have no layout or mode.
type Config struct {
	Backend tiers.Backend
	Spec    tiers.Spec
	Tier    tiers.Tier
	Layout  kv.Layout
	Copy    tiers.CopyMode
	// Direction is which way the blocks move: tiers.Load ("" too) or
	// tiers.Store.
	Direction tiers.Direction
	Variant   string // the tiers.Variant's name; "" for a tier with one
	Geom      kv.Geometry
	Seed      uint64
}

// Case returns the Sampler case of one fetch of p: the row every sample
// shares (with the tier's attributes, timed by the backend's timer for
// the tier's timing), the fetch, what runs before each sample
// (tiers.Preparer), its scrub and verification for tiers that move
// bytes, and the FLOPs of tiers that compute. The sweep and `go test
// -bench` both measure through it.
func (c Config) Case(p tiers.Prefix) harness.Case {
	hc := harness.Case{
		Row:   c.row(p),
		Label: c.label(units.FormatTokens(p.Tokens)),
		Timer: c.Backend.Timer(c.Spec.Timing),
		Fetch: func(ctx context.Context) error { return c.Tier.Fetch(ctx, p) },
	}
	pr, prepares := c.Tier.(tiers.Preparer)
	if prepares {
		hc.Before = func() error { return pr.Prepare(p) }
	}
	// Queued copies under 1 ms are repeated within a sample (the repeat
	// column); a tier that prepares each sample (disk) cannot repeat.
	hc.Repeat = c.Spec.Moves() && c.Spec.Timing == tiers.Queued && !prepares
	if c.Spec.Moves() {
		hc.Verify = func() error { return c.Tier.Verify(p) }
		if s, ok := c.Tier.(tiers.Scrubber); ok {
			hc.Scrub = func() error { return s.Scrub(p) }
		}
		hc.Derive = linkFrac
	} else {
		hc.Work = c.Tier.Work(p)
	}
	return hc
}

// linkFrac sets link_frac of an ok row whose link limit is known.
func linkFrac(r *results.Row) {
	if l := r.Float(results.ColLinkGBPerSecond); l > 0 && r.GBps > 0 {
		r.Set(results.ColLinkFrac, r.GBps/l)
	}
}

// label is the progress label of the configuration at prefix.
func (c Config) label(prefix string) string {
	l, m := string(c.Layout), string(c.Copy)
	if !c.Spec.Moves() {
		l, m = "-", "-"
	}
	name := c.Spec.Name
	if c.Variant != "" {
		name += "/" + c.Variant
	}
	if c.Direction == tiers.Store {
		name += " store"
	}
	return fmt.Sprintf("%-16s %-9s %-10s %-12s", name, l, m, prefix)
}

// row returns the columns every row of the configuration at p shares.
// Every attribute of the tier goes into its column: an attribute the
// sweep's file lacks fails the write, loudly (tiers declare theirs in
// Spec.Columns).
func (c Config) row(p tiers.Prefix) results.Row {
	r := results.NewRow(Suite.Name)
	r.Backend = c.Backend.Name()
	r.Tier = c.Spec.Name
	r.Model = c.Geom.Model
	r.PrefixTokens = int64(p.Tokens)
	r.Blocks = int64(p.Blocks)
	r.Set("seed", c.Seed)
	r.Set(results.ColDevice, c.Backend.Device())
	if g, ok := c.Backend.(gpuOrdinal); ok {
		r.Set(results.ColGPU, g.GPU())
	}
	r.Set(results.DirectionColumn, string(c.direction()))
	r.Transport = "compute"
	if c.Spec.Moves() {
		r.Transport = "memcpy"
		r.Layout = string(c.Layout)
		r.ChunkBytes = c.Geom.ChunkBytes(c.Layout)
		r.Bytes = int64(p.Blocks) * c.Geom.BlockBytes()
		r.Set(results.ColCopy, string(c.Copy))
		r.Set(results.ColDstMem, string(tiers.Device))
	}
	for k, v := range c.Tier.Attrs() {
		if k == "transport" {
			r.Transport = v
		} else {
			r.Extra[k] = v
		}
	}
	return r
}

// direction is the configuration's direction, Load when unset.
func (c Config) direction() tiers.Direction {
	if c.Direction == "" {
		return tiers.Load
	}
	return c.Direction
}

// Prefix returns the prefix of tokens tokens in g's blocks.
func Prefix(g kv.Geometry, tokens int) tiers.Prefix {
	return tiers.Prefix{Tokens: tokens, Blocks: g.Blocks(tokens)}
}
