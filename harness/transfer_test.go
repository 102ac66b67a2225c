package harness

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/tiers"
)

func TestTransferOptionsValidate(t *testing.T) {
	o := DefaultTransferOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	o.Reps, o.Warmup, o.Conns = 0, -1, 0
	o.Layouts = []string{"layerwise", "diagonal"}
	o.Transport, o.Path, o.Model = "smoke", "sideways", "gpt-9"
	o.Peers = []string{"nohost"}
	o.LineGbps = -1
	err := o.Validate()
	if err == nil {
		t.Fatal("bad options accepted")
	}
	for _, w := range []string{"--reps 0", "--warmup -1", "--conns 0", `"diagonal"`, `--transport "smoke"`,
		`--path "sideways"`, "--model", `--peer "nohost"`, "--line-rate"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
}

func TestDefaultTransferSizes(t *testing.T) {
	s := DefaultTransferSizes()
	if len(s) != 11 || s[0] != 16<<20 || s[len(s)-1] != 16<<30 {
		t.Fatalf("sizes %v", s)
	}
}

// TestTransferChunks checks the chunk lists: whole chunks of the layout's
// size at distinct offsets inside the pool, the last cut to the size.
func TestTransferChunks(t *testing.T) {
	o := DefaultTransferOptions()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	r := &transferRun{o: o}
	g := o.geom
	info := peer.Info{PoolBytes: 100 * g.BlockBytes()}
	for _, tc := range []struct {
		layout string
		size   int64
		chunk  int64
		n      int
	}{
		{TransferLayerwise, 3 * g.BlockBytes(), 16384, 3 * 96},
		{TransferLayerwise, 1 << 20, 16384, 64},
		{TransferBlockwise, 16 << 20, g.BlockBytes(), 11},
		{TransferContiguous, 16 << 20, 16 << 20, 1},
	} {
		list, reason := r.chunks(tc.layout, tc.size, info)
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
	if _, reason := r.chunks(TransferBlockwise, 101*g.BlockBytes(), peer.Info{PoolBytes: 200 * g.BlockBytes()}); reason != "" {
		t.Fatalf("fits: %s", reason)
	}
	if _, reason := r.chunks(TransferLayerwise, info.PoolBytes+1, info); !strings.Contains(reason, "exceeds the peer's pool") {
		t.Fatalf("too big: %q", reason)
	}
}

// TestTransferMismatch serves a pool with one corrupted byte: the rep is
// an error row saying where, and the run ends with ErrMeasurementFailed.
func TestTransferMismatch(t *testing.T) {
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
	o := DefaultTransferOptions()
	o.Peers, o.Sizes, o.Reps, o.Warmup = []string{e.Addr}, []int64{pool.Size()}, 1, 0
	o.Layouts = []string{TransferContiguous}
	dir := filepath.Join(t.TempDir(), "out")
	out, err := CreateOutput(dir, "transfer", []string{"test"}, system.Config{Root: "/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	terr := Transfer(context.Background(), o, out, &log)
	out.Close(false)
	if !errors.Is(terr, ErrMeasurementFailed) {
		t.Fatalf("Transfer: %v", terr)
	}
	rows, _, err := results.ReadCSV(filepath.Join(dir, results.TransferFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Status != results.StatusError || rows[0].Get("verified") != "false" ||
		!strings.Contains(rows[0].Reason, "mismatch at pool offset 0") {
		t.Fatalf("rows %+v", rows)
	}
}

// TestSweepRemoteTier runs the remote tier through the sweep harness with
// an embedded loopback peer over TCP.
func TestSweepRemoteTier(t *testing.T) {
	o := tinyOptions(t)
	o.Tiers = []string{"remote"}
	o.Copy = []tiers.CopyMode{tiers.PerCopy, tiers.Contiguous}
	o.Conns = 2
	_, rows, err, log := runSweep(t, context.Background(), o)
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, log)
	}
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	verified := 0
	for _, r := range rows {
		if r.Tier != "remote" || r.Status != results.StatusOK || r.Transport != "tcp" ||
			r.Get("path") != "loopback" || r.Get("src_mem") != "peer" || r.Get("device") != "tcp" {
			t.Fatalf("row %+v", r)
		}
		if r.Get("verified") == "true" {
			verified++
		}
	}
	if verified == 0 {
		t.Fatal("no verified rows")
	}
}

// runGPUTransfer runs Transfer against a fresh fake libcuda with env and
// returns the error and the rows.
func runGPUTransfer(t *testing.T, env map[string]string, o TransferOptions) (error, []results.Row) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	libs := cudatest.Build(t)
	o.Libs = system.Libraries{CUDA: libs.CUDA, CUBLAS: libs.CUBLAS}
	dir := filepath.Join(t.TempDir(), "out")
	out, err := CreateOutput(dir, "transfer", []string{"test"}, system.Config{Root: "/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	terr := Transfer(context.Background(), o, out, &log)
	out.Close(false)
	rows, _, err := results.ReadCSV(filepath.Join(dir, results.TransferFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("log:\n%s", log.String())
	return terr, rows
}

func TestTransferToGPU(t *testing.T) {
	o := DefaultTransferOptions()
	o.Sizes, o.Reps, o.Warmup = []int64{1 << 20, 3 << 20}, 2, 1
	o.DstMem = DstGPU
	terr, rows := runGPUTransfer(t, nil, o)
	if terr != nil {
		t.Fatalf("Transfer: %v", terr)
	}
	if len(rows) != 3*2*2 {
		t.Fatalf("%d rows, want 3 layouts x 2 sizes x 2 reps", len(rows))
	}
	for _, r := range rows {
		if r.Status != results.StatusOK || r.Get("verified") != "true" || r.Get("dst_mem") != "gpu" ||
			r.Backend != "cuda" || r.Get("path") != "loopback+bounce" || r.Transport != "tcp" ||
			!strings.Contains(r.Get("gpu"), "Fake CUDA Device 0") || r.GBps <= 0 {
			t.Fatalf("row %+v", r)
		}
	}
}

func TestTransferToGPUCorrupt(t *testing.T) {
	o := DefaultTransferOptions()
	o.Sizes, o.Reps, o.Warmup = []int64{1 << 20}, 2, 0
	o.Layouts = []string{TransferContiguous}
	o.DstMem = DstGPU
	// The first async copy is rep 0's H2D out of the bounce buffer.
	terr, rows := runGPUTransfer(t, map[string]string{"FAKECUDA_CORRUPT_COPY_AT": "0"}, o)
	if !errors.Is(terr, ErrMeasurementFailed) {
		t.Fatalf("Transfer: %v", terr)
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
			o := DefaultTransferOptions()
			o.Sizes, o.Reps, o.Warmup = []int64{1 << 20, 2 << 20}, 2, 1
			o.Layouts = []string{TransferLayerwise, TransferContiguous}
			o.PeerCopy = []int{0, 1}
			o.PoolBytes = 8 << 20
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			libs := cudatest.Build(t)
			o.Libs = system.Libraries{CUDA: libs.CUDA, CUBLAS: libs.CUBLAS}
			if tc.name == "no driver" {
				o.Libs.CUDA = filepath.Join(t.TempDir(), "libcuda.so.1")
			}
			dir := filepath.Join(t.TempDir(), "out")
			out, err := CreateOutput(dir, "transfer", []string{"test"}, system.Config{Root: "/"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			terr := Transfer(context.Background(), o, out, nil)
			out.Close(false)
			if terr != nil {
				t.Fatalf("Transfer: %v", terr)
			}
			rows, _, err := results.ReadCSV(filepath.Join(dir, results.TransferFile))
			if err != nil {
				t.Fatal(err)
			}
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
	o := DefaultTransferOptions()
	o.Sizes, o.Reps, o.Warmup = []int64{1 << 20}, 1, 0
	o.Layouts = []string{TransferContiguous}
	o.Peers = nil
	o.PeerCopy = []int{1, 0}
	// Copies 0: the network run has none (host destination), so the
	// first async copy is the peer copy.
	terr, rows := runGPUTransfer(t, map[string]string{"FAKECUDA_DEVICES": "2", "FAKECUDA_CORRUPT_COPY_AT": "0"}, o)
	if !errors.Is(terr, ErrMeasurementFailed) {
		t.Fatalf("Transfer: %v", terr)
	}
	r := rows[len(rows)-1]
	if r.Get("path") != PathPeerCopy || r.Status != results.StatusError || r.Get("verified") != "false" || r.Get("device") != "GPU1->GPU0 (P2P)" {
		t.Fatalf("row %+v", r)
	}
}
