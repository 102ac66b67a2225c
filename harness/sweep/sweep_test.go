package sweep

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// tinyConfig is a 2-layer model: 2 KV heads of dim 8 in bf16, 128 B per
// token, 2048 B per 16-token block, 4 layer-wise chunks of 512 B.
const tinyConfig = `{"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"hidden_size":32,
"intermediate_size":64,"torch_dtype":"bfloat16"}`

func tinyOptions(t *testing.T) Options {
	t.Helper()
	o := DefaultOptions()
	o.Geometry = geometryOf(t, tinyConfig)
	o.Tiers = []string{"hbm", "host", "recompute"}
	o.Prefixes = []int{64, 16}
	o.Policy.Reps, o.Policy.Warmup = 3, 1
	return o
}

// geometryOf resolves the geometry of a config.json's text.
func geometryOf(t *testing.T, config string) kv.Geometry {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := kv.Resolve("", p, kv.DefaultBlockTokens)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// runSweep runs o on the host backend into a fresh directory and returns
// it, its rows, the progress log and Run's error.
func runSweep(t *testing.T, ctx context.Context, o Options) (string, []results.Row, string, error) {
	t.Helper()
	b, err := tiers.OpenHost(tiers.BackendConfig{NUMA: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return runSweepOn(t, ctx, o, b)
}

// runSweepOn is runSweep on backend b.
func runSweepOn(t *testing.T, ctx context.Context, o Options, b tiers.Backend) (string, []results.Row, string, error) {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	out, err := harness.CreateOutput(dir, "sweep", []string{"test"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	serr := Run(ctx, o, b, out, &log)
	if serr == nil && out.Errors() > 0 {
		serr = errRows
	}
	if err := out.Close(serr != nil && serr != errRows); err != nil {
		t.Fatal(err)
	}
	rows, _, err := results.ReadCSV(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	return dir, rows, log.String(), serr
}

// errRows stands for "the run wrote error rows" in these tests.
var errRows = errors.New("some rows are errors")

func TestSweepEndToEnd(t *testing.T) {
	t.Parallel()
	o := tinyOptions(t)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	dir, rows, log, err := runSweep(t, context.Background(), o)
	if err != nil {
		t.Fatalf("Sweep: %v\n%s", err, log)
	}
	type key struct {
		tier, layout, copy string
		prefix             int64
	}
	count := map[key]int{}
	for _, r := range rows {
		k := key{r.Tier, r.Layout, r.Get("copy"), r.PrefixTokens}
		count[k]++
		if r.Backend != "host" || r.Model != o.Geometry.Model || r.Get("seed") != "1" {
			t.Errorf("row %+v", r)
		}
		switch {
		case r.Tier == "hbm":
			if r.Status != results.StatusSkipped || !strings.Contains(r.Reason, "no device memory") && !strings.Contains(r.Reason, "cuMemcpyBatchAsync") {
				t.Errorf("hbm row: %s %q", r.Status, r.Reason)
			}
		case r.Tier == "host" && r.Get("copy") == "batch":
			if r.Status != results.StatusSkipped || r.Reason != "copy mode batch needs cuMemcpyBatchAsync, which this backend lacks" {
				t.Errorf("batch row: %s %q", r.Status, r.Reason)
			}
		case r.Tier == "host":
			if r.Status != results.StatusOK {
				t.Fatalf("host row: %s %q", r.Status, r.Reason)
			}
			if r.Bytes != r.Blocks*2048 || r.Blocks != (r.PrefixTokens+15)/16 || r.Seconds <= 0 || r.GBps <= 0 || r.Transport != "memcpy" {
				t.Errorf("host row: blocks %d bytes %d s %v gbps %v", r.Blocks, r.Bytes, r.Seconds, r.GBps)
			}
			if (r.Rep == 0 || r.Rep == 2) != (r.Get("verified") == "true") {
				t.Errorf("rep %d verified %q", r.Rep, r.Get("verified"))
			}
			if !strings.Contains(r.Get("device"), "host stand-in") || r.Get("src_mem") != "pinned" || r.Get("timing") != "clock" {
				t.Errorf("host row attrs: %v", r.Extra)
			}
			wantChunk := int64(512)
			if r.Layout == "blockwise" {
				wantChunk = 2048
			}
			if r.ChunkBytes != wantChunk {
				t.Errorf("%s chunk bytes %d", r.Layout, r.ChunkBytes)
			}
		case r.Tier == "recompute":
			if r.Status != results.StatusOK || r.Layout != "" || r.Float("flops") != kv.PrefillFLOPs(o.Geometry, int(r.PrefixTokens)) || r.Float("tflops") <= 0 || r.Bytes != 0 {
				t.Errorf("recompute row: %s %q layout %q %v", r.Status, r.Reason, r.Layout, r.Extra)
			}
		}
	}
	for _, layout := range []string{"layerwise", "blockwise"} {
		for _, p := range []int64{16, 64} {
			if n := count[key{"host", layout, "percopy", p}]; n != 3 {
				t.Errorf("host %s percopy %d: %d rows, want 3", layout, p, n)
			}
			if n := count[key{"hbm", layout, "percopy", p}]; n != 1 {
				t.Errorf("hbm %s %d: %d rows, want 1 skipped", layout, p, n)
			}
		}
	}
	if n := count[key{"recompute", "", "", 16}]; n != 3 {
		t.Errorf("recompute 16: %d rows (only for one layout), want 3", n)
	}
	// Prefixes run in ascending order.
	var hostPrefixes []int64
	for _, r := range rows {
		if r.Tier == "host" && r.Status == results.StatusOK && r.Layout == "layerwise" && r.Get("copy") == "percopy" {
			hostPrefixes = append(hostPrefixes, r.PrefixTokens)
		}
	}
	if len(hostPrefixes) != 6 || hostPrefixes[0] != 16 || hostPrefixes[5] != 64 {
		t.Errorf("prefix order %v", hostPrefixes)
	}
	sum, _, err := results.ReadCSV(filepath.Join(dir, "sweep_summary.csv"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range sum {
		if s.Tier == "host" && s.Layout == "layerwise" && s.Get("copy") == "contiguous" && s.PrefixTokens == 64 {
			found = s.Get("n") == "3" && s.Float("seconds_p50") > 0
		}
	}
	if !found {
		t.Errorf("summary lacks the host/layerwise/contiguous/64 group with n=3")
	}
	m, err := results.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Settings["backend_used"] != "host" || m.Settings["block_bytes"] != "2048" || m.End.IsZero() || m.Interrupted {
		t.Errorf("manifest settings %v end %v", m.Settings, m.End)
	}
	if !strings.Contains(log, "p50") {
		t.Errorf("no progress lines:\n%s", log)
	}
}

func TestSweepBudget(t *testing.T) {
	t.Parallel()
	o := tinyOptions(t)
	o.Tiers = []string{"host"}
	o.Layouts = []kv.Layout{kv.Layerwise}
	o.Copy = []tiers.CopyMode{tiers.PerCopy}
	o.Policy.Budget = time.Nanosecond
	o.Prefixes = []int{32, 64}
	_, rows, _, err := runSweep(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// The one-block calibration puts both prefixes over the budget.
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.Status != results.StatusSkipped || !strings.Contains(r.Reason, "per rep exceeds the budget of 1ns") {
			t.Errorf("row %s %q", r.Status, r.Reason)
		}
	}
	// A single-block prefix has no calibration: measured, with one rep.
	o.Prefixes = []int{16}
	_, rows, _, err = runSweep(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Status != results.StatusOK {
		t.Errorf("rows %+v", rows)
	}
}

func TestSweepMemoryCheck(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	// 19 KiB available: 16 tokens need (2+1)·2 KiB, 64 tokens (5+4)·2 KiB = 18 KiB > 90%.
	os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte("MemAvailable: 19 kB\n"), 0o644)
	o := tinyOptions(t)
	o.Tiers = []string{"host"}
	o.Layouts = []kv.Layout{kv.Layerwise}
	o.Copy = []tiers.CopyMode{tiers.PerCopy}
	o.Root = root
	_, rows, _, err := runSweep(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var ok16, skip64 int
	for _, r := range rows {
		if r.PrefixTokens == 16 && r.Status == results.StatusOK {
			ok16++
		}
		if r.PrefixTokens == 64 && r.Status == results.StatusSkipped && strings.Contains(r.Reason, "KiB available") && strings.HasPrefix(r.Reason, "needs ") {
			skip64++
		}
	}
	if ok16 != 3 || skip64 != 1 {
		t.Errorf("ok16 %d skip64 %d: %+v", ok16, skip64, rows)
	}
}

func TestSweepCancelled(t *testing.T) {
	t.Parallel()
	o := tinyOptions(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir, rows, _, err := runSweep(t, ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if len(rows) != 0 {
		t.Errorf("%d rows after cancellation", len(rows))
	}
	m, _ := results.ReadManifest(filepath.Join(dir, "manifest.json"))
	if !m.Interrupted {
		t.Error("manifest not marked interrupted")
	}
}

// brokenTier fetches nothing and always fails verification, like a plan
// that copies the wrong chunk.
type brokenTier struct{}

func (brokenTier) Available() string                              { return "" }
func (brokenTier) Setup(ctx context.Context, maxBlocks int) error { return nil }
func (brokenTier) Fetch(ctx context.Context, p tiers.Prefix) error {
	return nil
}
func (brokenTier) Verify(p tiers.Prefix) error {
	return errors.New("block 0 chunk 1: data mismatch")
}
func (brokenTier) Attrs() map[string]string {
	return map[string]string{"transport": "test"}
}
func (brokenTier) Work(p tiers.Prefix) float64 { return 0 }
func (brokenTier) Close() error                { return nil }

func init() {
	tiers.Register(tiers.Spec{Desc: tierspec.Desc{Name: "broken-test", Order: 99}, New: func(tiers.Env) tiers.Tier { return brokenTier{} }})
}

func TestSweepVerifyFailure(t *testing.T) {
	t.Parallel()
	o := tinyOptions(t)
	o.Tiers = []string{"broken-test"}
	o.Layouts = []kv.Layout{kv.Layerwise}
	o.Copy = []tiers.CopyMode{tiers.PerCopy}
	o.Prefixes = []int{16}
	_, rows, log, err := runSweep(t, context.Background(), o)
	if err != errRows {
		t.Fatalf("err = %v", err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	// Reps 0 and 2 are verified and fail; rep 1 is not verified and stands.
	want := []results.Status{results.StatusError, results.StatusOK, results.StatusError}
	for i, r := range rows {
		if r.Status != want[i] {
			t.Errorf("rep %d: %s %q", r.Rep, r.Status, r.Reason)
		}
		if r.Transport != "test" {
			t.Errorf("transport %q", r.Transport)
		}
	}
	if rows[0].Get("verified") != "false" || !strings.Contains(rows[0].Reason, "verify: block 0 chunk 1") {
		t.Errorf("error row %+v", rows[0])
	}
	if !strings.Contains(log, "VERIFICATION FAILED") {
		t.Errorf("no loud line:\n%s", log)
	}
}

func TestSweepOptionsValidate(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Tiers = []string{"host", "tape"}
	o.Geometry.Layers = 0
	o.Prefixes = []int{0}
	o.Policy.Reps = -1
	o.Policy.Warmup = -1
	o.Policy.Budget = 0
	o.TierOptions["host"].(*tiers.HostOptions).Mem = "hbm"
	ro := o.TierOptions["remote"].(*tiers.RemoteOptions)
	ro.Transport, ro.Conns = "udp", 0
	o.Layouts = []kv.Layout{"rowwise"}
	o.Copy = []tiers.CopyMode{"dma"}
	err := o.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	got := option.Fields(err)
	for _, f := range []string{"tiers", "model", "prefix", "reps", "warmup", "host-mem", "transport", "conns", "budget", "layout", "copy"} {
		if !slices.Contains(got, f) {
			t.Errorf("error does not name %s: %v\n%v", f, got, err)
		}
	}
	good := DefaultOptions()
	good.Prefixes = []int{4096, 1024, 4096}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(good.Prefixes) != 2 || good.Prefixes[0] != 1024 || good.Geometry.BlockBytes() != 1572864 {
		t.Errorf("prefixes %v geometry %+v", good.Prefixes, good.Geometry)
	}
}

// Every registered tier declares the attributes it sets: each lands in a
// column of sweep.csv (peer_mem was once dropped without a word).
func TestTierAttrsHaveColumns(t *testing.T) {
	t.Parallel()
	b, err := tiers.OpenHost(tiers.BackendConfig{NUMA: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cols := Suite.Main().Header()
	g := tinyOptions(t).Geometry
	for _, spec := range tiers.All() {
		if spec.Name == "broken-test" {
			continue
		}
		tier := spec.New(tiers.Env{Backend: b, Geometry: g, Layout: kv.Layerwise, Copy: tiers.PerCopy, Seed: 1, Scratch: t.TempDir()})
		if err := tier.Setup(context.Background(), 2); err != nil {
			t.Fatalf("%s: setup: %v", spec.Name, err)
		}
		for k := range tier.Attrs() {
			if k != "transport" && !slices.Contains(cols, k) {
				t.Errorf("tier %s sets attribute %q, which sweep.csv has no column for", spec.Name, k)
			}
		}
		tier.Close()
	}
	if !slices.Contains(cols, "peer_mem") {
		t.Error("sweep.csv lacks peer_mem")
	}
}

// TestSweepTierAliases: --tiers takes any name a tier goes by (the
// probe's gpu, cpu, miss; dram) and runs the tier under its own name.
// Before, Validate refused gpu.
func TestSweepTierAliases(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Tiers = []string{"gpu", "dram", "miss", "remote"}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := o.selectedTiers(), []string{"hbm", "host", "remote", "recompute"}; !slices.Equal(got, want) {
		t.Errorf("tiers %v, want %v", got, want)
	}
}
