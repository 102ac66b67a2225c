package mesh

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/harness/transfer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
)

// A Worker is one rank's measuring side: what it reads with and how.
type Worker struct {
	Options  transfer.Options  // sizes, layouts, policy, transport, conns, destination, token, idle timeout
	Backends transfer.Backends // the destination backend and RDMA configuration
	// BackendConfig opens the cuda backend for GPU peer copies of intra
	// pairs (Task.PeerCopy).
	BackendConfig tiers.BackendConfig
	Log           io.Writer

	pc    tiers.PeerCopier // opened on the first peer-copy task
	pcWhy string
	pcBe  tiers.Backend
}

// A cfgKey is one layout and size of a task.
type cfgKey struct {
	layout string
	size   int64
}

// pairOf labels the pair src → dst.
func pairOf(src, dst Member) string {
	if src.Node == dst.Node {
		return PairIntra
	}
	return PairInter
}

// measurer returns a Measurer writing rows of the pair src → dst to sink.
func (w *Worker) measurer(t Task, src, dst Member, sink results.Sink, be transfer.Backends) *transfer.Measurer {
	s := &harness.Sampler{Suite: Suite.Name, Sink: sink, Log: w.Log, Policy: w.Options.Policy}
	m := transfer.NewMeasurer(w.Options, be, s, w.Log)
	m.Decorate = func(r *results.Row) {
		r.Set("src_rank", src.Rank)
		r.Set("dst_rank", dst.Rank)
		r.Set("src_node", src.Node)
		r.Set("dst_node", dst.Node)
		r.Set("pair", pairOf(src, dst))
		r.Set("pattern", t.Pattern)
		r.Set("src_nic", src.NIC)
		r.Set("dst_nic", dst.NIC)
		r.Set("src_gpu_nic", src.GPUNIC)
		r.Set("dst_gpu_nic", dst.GPUNIC)
		r.Set("launcher", dst.Launcher)
	}
	return m
}

// run measures task t (this rank is t.Dst) from src's pool, writing rows
// to sink and calling mark after each layout and size. A pool that cannot
// be reached, or a read that fails, makes error rows of what is left; the
// error returned must stop the rank (ctx cancelled, a row not sent).
func (w *Worker) run(ctx context.Context, t Task, src, self Member, sink results.Sink, mark func(cfgKey) error) error {
	m := w.measurer(t, src, self, sink, w.Backends)
	pair := pairOf(src, self)
	fmt.Fprintf(w.Log, "kvtier mesh: rank %d reads from rank %d (%s, %s, %s)\n", self.Rank, src.Rank, src.Node, src.Addr, pair)
	tgt, err := m.Open(ctx, src.Addr, pair)
	if err != nil {
		err = fmt.Errorf("rank %d (%s) pool %s: %w", src.Rank, src.Node, src.Addr, err)
		tgt = &transfer.Target{Name: src.Addr, Path: pair}
	} else {
		defer tgt.Client.Close()
	}
	for _, layout := range t.Layouts {
		for _, size := range t.Sizes {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if err != nil {
				if werr := m.Fail(tgt, layout, size, err); werr != nil {
					return werr
				}
			} else {
				res, werr := m.Config(ctx, tgt, layout, size)
				if werr != nil {
					return werr
				}
				if res.Err != nil {
					err = fmt.Errorf("not measured: an earlier read from rank %d failed: %w", src.Rank, res.Err)
				}
			}
			if merr := mark(cfgKey{layout, size}); merr != nil {
				return merr
			}
		}
	}
	if t.PeerCopy && pair == PairIntra {
		return w.peerCopy(ctx, t, src, self, sink)
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
			w.pc, w.pcBe, w.pcWhy = transfer.OpenPeerCopier(ctx, w.BackendConfig, self.GPU)
		}
	}
	be := w.Backends
	be.PeerCopy, be.PeerCopyWhy = w.pc, w.pcWhy
	m := w.measurer(t, src, self, sink, be)
	return m.PeerCopy(ctx, max(src.GPU, 0), max(self.GPU, 0))
}

// fail writes an error row for each layout and size of t not in done.
func (w *Worker) fail(t Task, src, dst Member, done map[cfgKey]bool, sink results.Sink, err error) error {
	m := w.measurer(t, src, dst, sink, w.Backends)
	tgt := &transfer.Target{Name: src.Addr, Path: pairOf(src, dst)}
	var errs []error
	for _, layout := range t.Layouts {
		for _, size := range t.Sizes {
			if !done[cfgKey{layout, size}] {
				errs = append(errs, m.Fail(tgt, layout, size, err))
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
