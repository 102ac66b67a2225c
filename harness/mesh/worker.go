package mesh

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/xfer"
)

// A Worker is one rank's measuring side: what it reads with and how.
type Worker struct {
	Options  xfer.Options  // sizes, layouts, policy, transport, conns, destination, token, idle timeout
	Backends xfer.Backends // the destination backend and RDMA configuration
	// BackendConfig opens the cuda backend for GPU peer copies of intra
	// pairs (Task.PeerCopy).
	BackendConfig tiers.BackendConfig
	Log           io.Writer

	pc    tiers.PeerCopier // opened on the first peer-copy task
	pcWhy string
	pcBe  tiers.Backend
}

// A cfgKey is one direction, layout and size of a task.
type cfgKey struct {
	dir    tiers.Direction
	layout string
	size   int64
}

// directions are the task's directions, load when it names none.
func (t Task) directions() []tiers.Direction {
	if len(t.Directions) == 0 {
		return []tiers.Direction{tiers.Load}
	}
	return t.Directions
}

// pairOf labels the pair src → dst.
func pairOf(src, dst Member) string {
	if src.Node == dst.Node {
		return PairIntra
	}
	return PairInter
}

// measurer returns a Measurer writing rows of task t's pair src → dst
// (src's pool, dst the rank measuring) in direction dir to sink. A
// store's rows name the data's way: from dst (src_rank) into src's pool
// (dst_rank).
func (w *Worker) measurer(t Task, src, dst Member, dir tiers.Direction, sink results.Sink, be xfer.Backends) *xfer.Measurer {
	if dir == tiers.Store {
		src, dst = dst, src
	}
	s := &harness.Sampler{Suite: Suite.Name, Sink: sink, Log: w.Log, Policy: w.Options.Policy}
	m := xfer.NewMeasurer(w.Options, be, s, w.Log)
	m.Decorate = func(r *results.Row) {
		r.Set(results.ColSrcRank, src.Rank)
		r.Set(results.ColDstRank, dst.Rank)
		r.Set(results.ColSrcNode, src.Node)
		r.Set(results.ColDstNode, dst.Node)
		r.Set(results.ColPair, pairOf(src, dst))
		r.Set("pattern", t.Pattern)
		r.Set("src_nic", src.NIC)
		r.Set("dst_nic", dst.NIC)
		r.Set("src_gpu_nic", src.GPUNIC)
		r.Set("dst_gpu_nic", dst.GPUNIC)
		r.Set("launcher", dst.Launcher)
	}
	return m
}

// run measures task t (this rank is t.Dst) against src's pool in each
// direction, writing rows to sink and calling mark after each direction,
// layout and size. A pool that cannot be reached, or a transfer that
// fails, makes error rows of what is left; the error returned must stop
// the rank (ctx cancelled, a row not sent).
func (w *Worker) run(ctx context.Context, t Task, src, self Member, sink results.Sink, mark func(cfgKey) error) error {
	pair := pairOf(src, self)
	fmt.Fprintf(w.Log, "kvtier mesh: rank %d reads from rank %d (%s, %s, %s)\n", self.Rank, src.Rank, src.Node, src.Addr, pair)
	tgt, err := w.measurer(t, src, self, tiers.Load, sink, w.Backends).Open(ctx, src.Addr, pair)
	if err != nil {
		err = fmt.Errorf("rank %d (%s) pool %s: %w", src.Rank, src.Node, src.Addr, err)
		tgt = &xfer.Target{Name: src.Addr, Path: pair}
	} else {
		defer func() {
			tgt.Client.Close()
			if tgt.Writer != nil {
				tgt.Writer.Close()
			}
		}()
	}
	for _, dir := range t.directions() {
		m := w.measurer(t, src, self, dir, sink, w.Backends)
		for _, layout := range t.Layouts {
			for _, size := range t.Sizes {
				if cerr := ctx.Err(); cerr != nil {
					return cerr
				}
				if werr := measureOne(ctx, m, tgt, cfgKey{dir, layout, size}, src.Rank, &err); werr != nil {
					return werr
				}
				if merr := mark(cfgKey{dir, layout, size}); merr != nil {
					return merr
				}
			}
		}
	}
	if t.PeerCopy && pair == PairIntra {
		return w.peerCopy(ctx, t, src, self, sink)
	}
	return nil
}

// measureOne measures one configuration k with m, or writes its error
// row when an earlier transfer failed (*failed); a transfer that fails
// becomes *failed for the rest of the task. The error returned must stop
// the rank.
func measureOne(ctx context.Context, m *xfer.Measurer, tgt *xfer.Target, k cfgKey, src int, failed *error) error {
	if *failed != nil {
		return m.FailDir(tgt, k.dir, k.layout, k.size, *failed)
	}
	res, err := m.ConfigDir(ctx, tgt, k.dir, k.layout, k.size)
	if err != nil {
		return err
	}
	if res.Err != nil {
		*failed = fmt.Errorf("not measured: an earlier %s with rank %d failed: %w", k.dir, src, res.Err)
	}
	return nil
}

// peerCopy times the GPUs' peer path from src's GPU to this rank's, in
// this process (as kvtier transfer --peer-copy), labelled path peercopy.
func (w *Worker) peerCopy(ctx context.Context, t Task, src, self Member, sink results.Sink) error {
	if w.pc == nil && w.pcWhy == "" {
		if self.GPU < 0 || src.GPU < 0 {
			w.pcWhy = "the GPUs' peer path needs a GPU on both ranks"
		} else {
			w.pc, w.pcBe, w.pcWhy = xfer.OpenPeerCopier(ctx, w.BackendConfig, self.GPU)
		}
	}
	be := w.Backends
	be.PeerCopy, be.PeerCopyWhy = w.pc, w.pcWhy
	m := w.measurer(t, src, self, tiers.Load, sink, be)
	return m.PeerCopy(ctx, max(src.GPU, 0), max(self.GPU, 0))
}

// fail writes an error row for each direction, layout and size of t not
// in done.
func (w *Worker) fail(t Task, src, dst Member, done map[cfgKey]bool, sink results.Sink, err error) error {
	tgt := &xfer.Target{Name: src.Addr, Path: pairOf(src, dst)}
	var errs []error
	for _, dir := range t.directions() {
		m := w.measurer(t, src, dst, dir, sink, w.Backends)
		for _, layout := range t.Layouts {
			for _, size := range t.Sizes {
				if !done[cfgKey{dir, layout, size}] {
					errs = append(errs, m.FailDir(tgt, dir, layout, size, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Close releases the peer copier's backend.
func (w *Worker) Close() error {
	if w.pcBe != nil {
		return w.pcBe.Close()
	}
	return nil
}
