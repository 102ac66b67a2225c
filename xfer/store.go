package xfer

import (
	"context"
	"fmt"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// ConfigDir measures one layout and size against t in direction dir:
// Config for a load, Store for a store.
func (r *Measurer) ConfigDir(ctx context.Context, t *Target, dir tiers.Direction, layout string, size int64) (harness.Result, error) {
	if dir == tiers.Store {
		return r.Store(ctx, t, layout, size)
	}
	return r.Config(ctx, t, layout, size)
}

// FailDir writes the error row of one configuration of t in direction
// dir that could not be measured, as Fail does for loads; only a failed
// write is returned.
func (r *Measurer) FailDir(t *Target, dir tiers.Direction, layout string, size int64, err error) error {
	if dir != tiers.Store {
		return r.Fail(t, layout, size, err)
	}
	c := harness.Case{Row: r.storeRow(t, layout, size), Label: r.label(t.Name+" store", layout, size), Timer: &tiers.ClockTimer{}}
	return r.sampler.Fail(c, 0, err)
}

// storeRow turns a load's row around: the direction column says store,
// and the source is this side's memory, the destination the peer's.
func (r *Measurer) storeRow(t *Target, layout string, size int64) results.Row {
	row := r.row(t, layout, size)
	row.Set(results.DirectionColumn, string(tiers.Store))
	row.Set(results.ColSrcMem, r.o.DstMem)
	row.Set(results.ColDstMem, t.Info.Mem)
	return row
}

// Store measures pushes of one layout and size into t's pool: the same
// chunks a load of that layout and size reads, written from a buffer of
// this side (host or GPU memory, through a pinned bounce buffer for
// GPU memory) by a session that may write, and read back to verify. A
// peer that refuses writes gives an error row saying how to start it.
func (r *Measurer) Store(ctx context.Context, t *Target, layout string, size int64) (harness.Result, error) {
	hc := harness.Case{Row: r.storeRow(t, layout, size), Label: r.label(t.Name+" store", layout, size), Derive: derive,
		Timer: &tiers.ClockTimer{}}
	var list []peer.Chunk
	reason := r.fits(size)
	if reason == "" {
		list, reason = chunks(r.o.Geometry, r.o.Seed, layout, size, t.Info.PoolBytes)
	}
	if reason != "" {
		return harness.Result{}, r.sampler.Skip(hc, reason)
	}
	if t.Writer == nil {
		w, err := peer.Dial(ctx, t.addr, r.dialOptions(true))
		if err != nil {
			return harness.Result{Err: err}, r.sampler.Fail(hc, 0, fmt.Errorf("a session that stores: %w", err))
		}
		t.Writer = w
	}
	buf, err := r.be.Dst.Alloc(tiers.Device, size)
	if err != nil {
		return harness.Result{}, r.sampler.Skip(hc, fmt.Sprintf("source of %s: %v", units.FormatBytes(size), err))
	}
	defer buf.Close()
	push, err := tiers.NewPush(ctx, r.be.Dst, t.Writer, buf, list, r.o.Seed, tiers.Contiguous, t.Name != "embedded")
	if err != nil {
		return harness.Result{Err: err}, r.sampler.Fail(hc, 0, err)
	}
	defer func() {
		if err := push.Close(); err != nil {
			fmt.Fprintf(r.log, "kvtier transfer: warning: %v\n", err)
		}
	}()
	if push.Path != peer.DestHost {
		hc.Row.Set(results.ColPath, t.Path+"+"+push.Path)
		hc.Row.Set("gpudirect_reason", push.Why)
		r.sayWhy(push.Why)
	}
	hc.Fetch = func(ctx context.Context) error { return push.Store(ctx, list) }
	hc.Scrub = func() error { return push.Scrub(list) }
	hc.Verify = func() error {
		if i, err := push.Verify(list); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
		return nil
	}
	return r.sampler.Measure(ctx, hc)
}
