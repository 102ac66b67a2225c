package transfer

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/xfer"
)

// labelColumns are what every suite's rows must say alike of the same
// kind of fetch: how it was timed, whether the stream was held, which
// reps were verified.
var labelColumns = []string{"timing", "held", "verified"}

// tiny is a 2-layer model: 2048 B per 16-token block.
func tiny(t *testing.T) kv.Geometry {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	cfg := `{"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"hidden_size":32,"intermediate_size":64}`
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := kv.Resolve("", p, 16)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// sweepRows runs the remote tier's sweep of 4 blocks with policy p and
// returns its rows.
func sweepRows(t *testing.T, g kv.Geometry, p harness.Policy, root string) []results.Row {
	t.Helper()
	o := sweep.DefaultOptions()
	o.Geometry, o.Tiers, o.Prefixes, o.Policy, o.Root = g, []string{"remote"}, []int{64}, p, root
	o.Layouts, o.Copy = []kv.Layout{kv.Layerwise}, []tiers.CopyMode{tiers.PerCopy}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := tiers.OpenHost(tiers.BackendConfig{NUMA: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := filepath.Join(t.TempDir(), "sweep")
	out, err := harness.CreateOutput(dir, "sweep", []string{"test"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sweep.Run(context.Background(), o, b, out, nil); err != nil {
		t.Fatal(err)
	}
	out.Close(false)
	rows, _, err := results.ReadCSV(filepath.Join(dir, sweep.File))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// benchRow measures one fetch of 4 blocks the way `go test -bench ./bench`
// records its row: the sweep's case through a Sampler of one rep.
func benchRow(t *testing.T, g kv.Geometry) results.Row {
	t.Helper()
	b, err := tiers.OpenHost(tiers.BackendConfig{NUMA: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	spec, _ := tiers.Lookup("remote")
	env := tiers.Env{Backend: b, Geometry: g, Layout: kv.Layerwise, Copy: tiers.PerCopy, Seed: 1}
	c := sweep.Config{Backend: b, Spec: spec, Tier: spec.New(env), Layout: kv.Layerwise, Copy: tiers.PerCopy, Geom: g, Seed: 1}
	defer c.Tier.Close()
	if err := c.Tier.Setup(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	var row results.Row
	s := &harness.Sampler{Suite: "bench", Policy: harness.Policy{Reps: 1},
		Sink: sinkFunc(func(r results.Row) error { row = r; return nil })}
	if _, err := s.Measure(context.Background(), c.Case(sweep.Prefix(g, 64))); err != nil {
		t.Fatal(err)
	}
	return row
}

type sinkFunc func(results.Row) error

func (f sinkFunc) Write(r results.Row) error { return f(r) }
func (f sinkFunc) Close() error              { return nil }

// The same kind of fetch — blocks read from an embedded loopback peer
// over TCP — through the sweep's remote tier, MB2 and the bench path:
// the rows carry the same labels rep by rep, and a fetch too large for
// memory is skipped by the same rule with the same words.
func TestSameFetchSameLabels(t *testing.T) {
	t.Parallel()
	g := tiny(t)
	p := harness.Policy{Warmup: 1, Reps: 3, Budget: time.Minute}
	sw := sweepRows(t, g, p, "/")
	o := xfer.DefaultOptions()
	o.Geometry, o.Sizes, o.Layouts, o.Policy = g, []int64{4 * g.BlockBytes()}, []string{xfer.Layerwise}, p
	tr, errs := runTransfer(t, o, tiers.BackendConfig{NUMA: -1})
	if errs != 0 || len(sw) != 3 || len(tr) != 3 {
		t.Fatalf("%d sweep rows, %d transfer rows, %d errors", len(sw), len(tr), errs)
	}
	for rep := range 3 {
		for _, c := range labelColumns {
			if a, b := sw[rep].Get(c), tr[rep].Get(c); a != b {
				t.Errorf("rep %d %s: sweep %q, transfer %q", rep, c, a, b)
			}
		}
	}
	if sw[0].Get("verified") != "true" || sw[1].Get("verified") != "" || sw[2].Get("verified") != "true" {
		t.Errorf("verified reps %q %q %q, want the first and the last", sw[0].Get("verified"), sw[1].Get("verified"), sw[2].Get("verified"))
	}
	bench := benchRow(t, g)
	for _, c := range labelColumns {
		if a, b := sw[0].Get(c), bench.Get(c); a != b {
			t.Errorf("%s: sweep rep 0 %q, bench %q", c, a, b)
		}
	}

	// 6 kB of free memory: every pool is too large, by the same rule.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte("MemAvailable: 6 kB\n"), 0o644)
	sw = sweepRows(t, g, p, root)
	o.Root, o.PoolBytes = root, 8*g.BlockBytes()
	tr, _ = runTransfer(t, o, tiers.BackendConfig{NUMA: -1})
	for _, r := range append(sw, tr...) {
		if r.Status != results.StatusSkipped || !strings.HasPrefix(r.Reason, "needs ") || !strings.HasSuffix(r.Reason, "of host memory, 6 KiB available") {
			t.Errorf("%s row %s %q, want skipped by the memory-fit rule", r.Suite, r.Status, r.Reason)
		}
	}
}

// runTransfer runs o, as kvtier transfer does, with the backends
// xfer.OpenBackends opens for cfg into a fresh directory and returns the
// rows and the error rows counted.
func runTransfer(t *testing.T, o xfer.Options, cfg tiers.BackendConfig) ([]results.Row, int) {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	be, done, err := xfer.OpenBackends(context.Background(), o, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	dir := filepath.Join(t.TempDir(), "out")
	out, err := harness.CreateOutput(dir, Suite.Name, []string{"test"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := xfer.Run(context.Background(), o, be, out, Suite, io.Discard); err != nil {
		t.Fatalf("Run: %v", err)
	}
	n := out.Errors()
	if err := out.Close(false); err != nil {
		t.Fatal(err)
	}
	rows, _, err := results.ReadCSV(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	return rows, n
}
