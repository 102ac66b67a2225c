package xfer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
)

func TestTransferOptionsValidate(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	o.Policy.Reps, o.Policy.Warmup, o.Conns = 0, -1, 0
	o.Layouts = []string{"layerwise", "diagonal"}
	o.Transport, o.Path = "smoke", "sideways"
	o.Geometry.Layers = 0
	o.Peers = []string{"nohost"}
	o.LineGbps = -1
	o.Sizes = []int64{0}
	err := o.Validate()
	if err == nil {
		t.Fatal("bad options accepted")
	}
	got := option.Fields(err)
	for _, f := range []string{"reps", "warmup", "conns", "layout", "transport", "path", "model", "peer", "line-rate", "sizes"} {
		if !slices.Contains(got, f) {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
}

func TestDefaultSizes(t *testing.T) {
	t.Parallel()
	s := DefaultSizes()
	if len(s) != 11 || s[0] != 16<<20 || s[len(s)-1] != 16<<30 {
		t.Fatalf("sizes %v", s)
	}
}

// TestTransferChunks checks the chunk lists: whole chunks of the layout's
// size at distinct offsets inside the pool, the last cut to the size.
func TestTransferChunks(t *testing.T) {
	t.Parallel()
	g := DefaultOptions().Geometry
	info := peer.Info{PoolBytes: 100 * g.BlockBytes()}
	for _, tc := range []struct {
		layout string
		size   int64
		chunk  int64
		n      int
	}{
		{Layerwise, 3 * g.BlockBytes(), 16384, 3 * 96},
		{Layerwise, 1 << 20, 16384, 64},
		{Blockwise, 16 << 20, g.BlockBytes(), 11},
		{Contiguous, 16 << 20, 16 << 20, 1},
	} {
		list, reason := chunks(g, 1, tc.layout, tc.size, info.PoolBytes)
		if reason != "" {
			t.Fatalf("%s %d: %s", tc.layout, tc.size, reason)
		}
		if len(list) != tc.n || peer.Bytes(list) != tc.size || list[0].Len != min(tc.chunk, tc.size) {
			t.Fatalf("%s %d: %d chunks of %d, %d bytes", tc.layout, tc.size, len(list), list[0].Len, peer.Bytes(list))
		}
		seen := map[int64]bool{}
		var dst int64
		for _, c := range list {
			if seen[c.Src] || c.Src < 0 || c.Src+c.Len > info.PoolBytes || c.Dst != dst {
				t.Fatalf("%s: bad chunk %+v", tc.layout, c)
			}
			seen[c.Src] = true
			dst += c.Len
		}
	}
	if _, reason := chunks(g, 1, Blockwise, 101*g.BlockBytes(), 200*g.BlockBytes()); reason != "" {
		t.Fatalf("fits: %s", reason)
	}
	if _, reason := chunks(g, 1, Layerwise, info.PoolBytes+1, info.PoolBytes); !strings.Contains(reason, "exceeds the peer's pool") {
		t.Fatalf("too big: %q", reason)
	}
}

// TestTransferMismatch serves a pool with one corrupted byte: the rep is
// an error row saying where, and the run ends with ErrMeasurementFailed.
func TestTransferMismatch(t *testing.T) {
	t.Parallel()
	pool, err := peer.NewHostPool(8<<20, 5)
	if err != nil {
		t.Fatal(err)
	}
	pool.Host()[0] ^= 0xff // blockwise chunks start at block boundaries; offset 0 is one of them
	e, err := peer.StartEmbedded(peer.ServerConfig{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	o := DefaultOptions()
	o.Peers, o.Sizes, o.Policy = []string{e.Addr}, []int64{pool.Size()}, harness.Policy{Reps: 1}
	o.Layouts = []string{Contiguous}
	rows, errs := runTransfer(t, o, tiers.BackendConfig{NUMA: -1})
	if errs != 1 {
		t.Fatalf("%d error rows counted, want 1", errs)
	}
	if len(rows) != 1 || rows[0].Status != results.StatusError || rows[0].Get("verified") != "false" ||
		!strings.Contains(rows[0].Reason, "mismatch at pool offset 0") {
		t.Fatalf("rows %+v", rows)
	}
}

// testSuite is what the transfer suite writes: rows of Columns.
var testSuite = results.Suite{Name: "transfer", Files: []results.File{{Name: "transfer.csv", Columns: Columns, Metric: "time"}}}

// runTransfer runs o with the backends OpenBackends opens for cfg into
// a fresh directory and returns the rows and the error rows counted.
func runTransfer(t *testing.T, o Options, cfg tiers.BackendConfig) ([]results.Row, int) {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	be, done, err := OpenBackends(context.Background(), o, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	dir := filepath.Join(t.TempDir(), "out")
	out, err := harness.CreateOutput(dir, "transfer", []string{"test"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := Run(context.Background(), o, be, out, testSuite, &log); err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	n := out.Errors()
	if err := out.Close(false); err != nil {
		t.Fatal(err)
	}
	rows, _, err := results.ReadCSV(filepath.Join(dir, testSuite.Main().Name))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("log:\n%s", log.String())
	return rows, n
}

// fakeGPU sets env and builds a fresh fake libcuda for the test's
// backends.
func fakeGPU(t *testing.T, env map[string]string) tiers.BackendConfig {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	libs := cudatest.Use(t)
	return tiers.BackendConfig{NUMA: -1, LibCUDA: libs.CUDA, LibCUBLAS: libs.CUBLAS}
}

func TestTransferToGPU(t *testing.T) {
	o := DefaultOptions()
	o.Sizes, o.Policy = []int64{1 << 20, 3 << 20}, harness.Policy{Reps: 2, Warmup: 1}
	o.DstMem = DstGPU
	rows, errs := runTransfer(t, o, fakeGPU(t, nil))
	if errs != 0 {
		t.Fatalf("%d error rows", errs)
	}
	if len(rows) != 3*2*2 {
		t.Fatalf("%d rows, want 3 layouts x 2 sizes x 2 reps", len(rows))
	}
	for _, r := range rows {
		if r.Status != results.StatusOK || r.Get("verified") != "true" || r.Get("dst_mem") != "gpu" ||
			r.Backend != "cuda" || r.Get("path") != "loopback+bounce" || r.Transport != "tcp" ||
			r.Get("gpudirect_reason") != "transport tcp cannot write device memory" ||
			!strings.Contains(r.Get("gpu"), "Fake CUDA Device 0") || r.GBps <= 0 {
			t.Fatalf("row %+v", r)
		}
	}
}

func TestTransferToGPUCorrupt(t *testing.T) {
	o := DefaultOptions()
	o.Sizes, o.Policy = []int64{1 << 20}, harness.Policy{Reps: 2}
	o.Layouts = []string{Contiguous}
	o.DstMem = DstGPU
	// The first async copy is rep 0's H2D out of the bounce buffer.
	rows, errs := runTransfer(t, o, fakeGPU(t, map[string]string{"FAKECUDA_CORRUPT_COPY_AT": "0"}))
	if errs != 1 {
		t.Fatalf("%d error rows, want 1", errs)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	if r := rows[0]; r.Status != results.StatusError || r.Get("verified") != "false" || !strings.Contains(r.Reason, "verify") {
		t.Fatalf("rep 0 %+v, want a verification error", r)
	}
	if r := rows[1]; r.Status != results.StatusOK || r.Get("verified") != "true" {
		t.Fatalf("rep 1 %+v, want ok", r)
	}
}

func TestTransferPeerCopy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		env        map[string]string
		wantStatus results.Status
		want       string // in device (ok) or reason (skipped)
	}{
		{"p2p", map[string]string{"FAKECUDA_DEVICES": "2"}, results.StatusOK, "GPU0->GPU1 (P2P)"},
		{"staged", map[string]string{"FAKECUDA_DEVICES": "2", "FAKECUDA_NO_P2P": "1"}, results.StatusOK, "GPU0->GPU1 (staged through host)"},
		{"one gpu", map[string]string{"FAKECUDA_DEVICES": "1"}, results.StatusSkipped, "peer copy needs two GPUs; the driver sees 1"},
		{"no driver", nil, results.StatusSkipped, "peer copy needs two GPUs; cuda: cannot load"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Sizes, o.Policy = []int64{1 << 20, 2 << 20}, harness.Policy{Reps: 2, Warmup: 1}
			o.Layouts = []string{Layerwise, Contiguous}
			o.PeerCopy = []int{0, 1}
			o.PoolBytes = 8 << 20
			cfg := fakeGPU(t, tc.env)
			if tc.name == "no driver" {
				cfg.LibCUDA = filepath.Join(t.TempDir(), "libcuda.so.1")
			}
			rows, _ := runTransfer(t, o, cfg)
			var pc []results.Row
			for _, r := range rows {
				if r.Get("path") == PathPeerCopy {
					pc = append(pc, r)
				} else if r.Status != results.StatusOK || r.Get("dst_mem") != "host" {
					t.Fatalf("network row %+v", r)
				}
			}
			want := 2 * 2 * 2 // layouts x sizes x reps
			if tc.wantStatus == results.StatusSkipped {
				want = 2 * 2
			}
			if len(pc) != want || len(rows) != len(pc)+8 {
				t.Fatalf("%d peer copy rows of %d, want %d and 8 network rows", len(pc), len(rows), want)
			}
			for _, r := range pc {
				if r.Status != tc.wantStatus || r.Transport != "cuda" || r.Backend != "cuda" || r.Get("dst_mem") != "gpu" {
					t.Fatalf("row %+v", r)
				}
				if tc.wantStatus == results.StatusSkipped {
					if !strings.Contains(r.Reason, tc.want) {
						t.Fatalf("reason %q lacks %q", r.Reason, tc.want)
					}
					continue
				}
				if r.Get("device") != tc.want || r.Get("verified") != "true" || r.GBps <= 0 || r.Get("src_mem") != "gpu" {
					t.Fatalf("row %+v", r)
				}
			}
		})
	}
}

func TestTransferPeerCopyCorrupt(t *testing.T) {
	o := DefaultOptions()
	o.Sizes, o.Policy = []int64{1 << 20}, harness.Policy{Reps: 1}
	o.Layouts = []string{Contiguous}
	o.PeerCopy = []int{1, 0}
	// Copies 0: the network run has none (host destination), so the
	// first async copy is the peer copy.
	rows, errs := runTransfer(t, o, fakeGPU(t, map[string]string{"FAKECUDA_DEVICES": "2", "FAKECUDA_CORRUPT_COPY_AT": "0"}))
	if errs != 1 {
		t.Fatalf("%d error rows, want 1", errs)
	}
	r := rows[len(rows)-1]
	if r.Get("path") != PathPeerCopy || r.Status != results.StatusError || r.Get("verified") != "false" || r.Get("device") != "GPU1->GPU0 (P2P)" {
		t.Fatalf("row %+v", r)
	}
}

// TestEmbeddedPoolFits: the embedded peer's pool holds every size this
// machine can hold, in whole blocks, at random slots (2 MiB was rounded
// down to one 1.5 MiB block and skipped, blaming the user); a size too
// large for free memory does not size the pool (1 TiB made the peer fill
// 40% of free memory before its row said skipped).
func TestEmbeddedPoolFits(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	meminfo := "MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\n" // 8 GiB free
	if err := os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte(meminfo), 0o644); err != nil {
		t.Fatal(err)
	}
	g := DefaultOptions().Geometry
	bb := g.BlockBytes()
	for _, tc := range []struct {
		sizes []int64
		max   int64 // the pool is at most this
	}{
		{[]int64{2 << 20}, 8 << 20},
		{[]int64{bb}, 3 * bb},
		{[]int64{16 << 20, 1 << 40}, 32 << 20},
		{[]int64{1 << 40}, bb},
	} {
		r := &Measurer{o: Options{Geometry: g, Sizes: tc.sizes, Root: root}}
		pool := r.embeddedPoolBytes()
		if pool%bb != 0 || pool > tc.max {
			t.Errorf("sizes %v: pool %d bytes, want whole blocks, at most %d", tc.sizes, pool, tc.max)
		}
		for _, s := range tc.sizes {
			if s >= 1<<30 {
				continue // past free memory: skipped by the memory check
			}
			for _, layout := range []string{Layerwise, Blockwise, Contiguous} {
				if _, reason := chunks(g, 1, layout, s, pool); reason != "" {
					t.Errorf("size %d %s in a pool of %d: %s", s, layout, pool, reason)
				}
			}
		}
	}
}

// TestTransferWeights: the progress weighs each configuration by the
// bytes it moves in all its samples, the embedded peer's first also by
// the pool it fills, so that the ETA after a 16 MiB row counts the GiB
// rows ahead; one weight per configuration, in the order Run runs them.
func TestTransferWeights(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Sizes, o.Layouts, o.Root = []int64{16 << 20, 1 << 30}, []string{Layerwise, Contiguous}, t.TempDir()
	r := &Measurer{o: o}
	w := r.weights([]string{"", "nodeB:7471"})
	if len(w) != 2*2*2 {
		t.Fatalf("%d weights, want 8 (2 peers × 2 layouts × 2 sizes)", len(w))
	}
	if w[1] < 30*w[4] || w[0] <= w[4] || w[5] != w[1] {
		t.Errorf("weights %.3g: want 1 GiB over 30 times 16 MiB, and the embedded peer's pool in its first", w)
	}
}
