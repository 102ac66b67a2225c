package mesh

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// Run measures every step of the schedule into out: mesh.csv as rows
// arrive, then mesh_matrix.csv and mesh_ranks.json; at the end the ranks
// are told the run is over. A rank that is gone gives error rows for its
// pairs and the run goes on; ctx's error or a failed write ends it.
func (c *Coordinator) Run(ctx context.Context, out *harness.Output, w *Worker, pattern string, peerCopy bool) (err error) {
	defer func() { c.Close(err) }()
	out.Manifest.Settings = c.cfg.Settings
	out.Manifest.Notes = map[string]any{"world_size": c.size, "launcher": c.self.Launcher,
		"coordinator": c.ln.Addr().String(), "coordinator_from": c.self.CoordinatorFrom, "nodes": c.nodes()}
	if err := c.writeRanks(out); err != nil {
		return err
	}
	sink, err := out.Open(Suite.Main())
	if err != nil {
		return err
	}
	col := newCollector(sink)
	steps := schedule(pattern, c.members, w.Options.RunDirections(), w.Options.Layouts, w.Options.Sizes, peerCopy)
	n := 0
	for _, step := range steps {
		for _, t := range step {
			n += len(t.directions()) * len(t.Layouts) * len(t.Sizes)
		}
	}
	harness.ProgressOf(c.cfg.Log).Plan(n)
	for _, step := range steps {
		if err := c.step(ctx, step, w, col); err != nil {
			return err
		}
	}
	return c.writeMatrix(out, col)
}

// nodes lists the ranks of each node.
func (c *Coordinator) nodes() map[string][]int {
	out := map[string][]int{}
	for _, m := range c.members {
		out[m.Node] = append(out[m.Node], m.Rank)
	}
	return out
}

// writeRanks writes every rank's member record, manifest included.
func (c *Coordinator) writeRanks(out *harness.Output) error {
	b, err := json.MarshalIndent(c.members, "", "  ")
	if err != nil {
		return fmt.Errorf("mesh: %s: %w", RanksFile, err)
	}
	path := filepath.Join(out.Dir, RanksFile)
	if err := results.WriteBytes(path, append(b, '\n')); err != nil {
		return fmt.Errorf("mesh: %w", err)
	}
	out.AddFile(path)
	return out.WriteManifest()
}

// writeMatrix writes mesh_matrix.csv from what the collector gathered.
func (c *Coordinator) writeMatrix(out *harness.Output, col *collector) error {
	path := filepath.Join(out.Dir, MatrixFile)
	err := results.WriteFile(path, func(f io.Writer) error {
		w := csv.NewWriter(f)
		w.Write(results.Names(MatrixColumns))
		for _, r := range col.matrix() {
			rec := make([]string, len(MatrixColumns))
			for i, c := range MatrixColumns {
				rec[i] = c.Format(r.Cell(c.Name))
			}
			w.Write(rec)
		}
		w.Flush()
		return w.Error()
	})
	if err != nil {
		return fmt.Errorf("mesh: %s: %w", MatrixFile, err)
	}
	out.AddFile(path)
	return nil
}

// step runs the tasks of one step at once and waits for all of them.
func (c *Coordinator) step(ctx context.Context, tasks []Task, w *Worker, col *collector) error {
	errs := make([]error, len(tasks))
	var wg sync.WaitGroup
	for i, t := range tasks {
		wg.Go(func() {
			errs[i] = c.task(ctx, t, w, col)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// goneWhy says why rank r is gone, nil while it is there (rank 0 always).
func (c *Coordinator) goneWhy(r int) error {
	rl := c.links[r]
	if rl == nil {
		return nil
	}
	select {
	case <-rl.gone:
		return rl.goneErr
	default:
		return nil
	}
}

// task runs one task: in this process when rank 0 reads, else by the
// destination rank, whose rows arrive over its link.
func (c *Coordinator) task(ctx context.Context, t Task, w *Worker, col *collector) error {
	src, dst := c.members[t.Src], c.members[t.Dst]
	if why := c.goneWhy(t.Src); why != nil {
		return w.fail(t, src, dst, nil, col, fmt.Errorf("source rank %d (%s) gone before this pair: %v", src.Rank, src.Node, why))
	}
	if t.Dst == c.self.Rank {
		return w.run(ctx, t, src, dst, col, func(cfgKey) error { return nil })
	}
	rl := c.links[t.Dst]
	if why := c.goneWhy(t.Dst); why != nil {
		return w.fail(t, src, dst, nil, col, fmt.Errorf("rank %d (%s) gone before this pair: %v", dst.Rank, dst.Node, why))
	}
	if err := rl.send(message{Kind: kindTask, Task: &t}); err != nil {
		rl.c.Close() // the reader sees it and closes gone
	}
	done := map[cfgKey]bool{}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m := <-rl.events:
			if fin, err := c.event(m, col, done); fin || err != nil {
				return err
			}
		case <-rl.gone:
			for len(rl.events) > 0 {
				if fin, err := c.event(<-rl.events, col, done); fin || err != nil {
					return err
				}
			}
			return w.fail(t, src, dst, done, col, fmt.Errorf("rank %d (%s) gone mid-pair: %v", dst.Rank, dst.Node, rl.goneErr))
		}
	}
}

// event handles one message of a rank running a task; fin says the task
// is over.
func (c *Coordinator) event(m message, col *collector, done map[cfgKey]bool) (fin bool, err error) {
	switch m.Kind {
	case kindRow:
		r, err := cellsRow(m.Row)
		if err != nil {
			return false, fmt.Errorf("mesh: a row from a rank: %w", err)
		}
		return false, col.Write(r)
	case kindConfig:
		dir := tiers.Direction(cmp.Or(m.Direction, string(tiers.Load)))
		done[cfgKey{dir, m.Layout, m.Bytes}] = true
		pr := harness.ProgressOf(c.cfg.Log)
		pr.Begin(fmt.Sprintf("%s %s %s", dir, m.Layout, units.FormatBytes(m.Bytes)))
		pr.End("measured by another rank")
	case kindDone:
		return true, nil
	}
	return false, nil
}

// rowSink sends a rank's rows to the coordinator.
type rowSink struct {
	l      *link
	header []string
}

func (s rowSink) Write(r results.Row) error {
	return s.l.send(message{Kind: kindRow, Row: rowCells(r, s.header)})
}

func (s rowSink) Close() error { return nil }
