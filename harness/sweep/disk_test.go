package sweep

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/csrc/cufilewrap/cufiletest"
	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/diskio/disktest"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
)

// diskConfig is a 2-layer model with 4 KiB chunks (2 KV heads of dim 64
// in bf16, 16-token blocks), which O_DIRECT reads on any disk.
const diskConfig = `{"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"hidden_size":256,
"intermediate_size":64,"torch_dtype":"bfloat16"}`

func diskOptions(t *testing.T, io string, cached bool) Options {
	t.Helper()
	o := DefaultOptions()
	o.Geometry, o.Tiers, o.Prefixes = geometryOf(t, diskConfig), []string{"disk"}, []int{256, 64}
	o.Copy = []tiers.CopyMode{tiers.PerCopy, tiers.Batch, tiers.Contiguous}
	o.Policy.Reps, o.Policy.Warmup = 3, 1
	d := o.TierOptions["disk"].(*tiers.DiskOptions)
	d.IO, d.Cached, d.IODepth = io, cached, 8
	return o
}

// TestSweepDisk runs the disk tier in both layouts, both I/O modes and
// the page-cache variant: every measured row is ok, labelled, and
// verified on its first and last rep; batch is skipped on the host
// backend; the file is gone when the run ends.
func TestSweepDisk(t *testing.T) {
	dir, rows, _, err := runSweep(t, context.Background(), diskOptions(t, "uring,pread", true))
	if err != nil {
		t.Fatal(err)
	}
	ok := map[string]int{}
	for _, r := range rows {
		if r.Tier != "disk" {
			t.Fatalf("row of tier %s", r.Tier)
		}
		if r.Get("copy") == "batch" {
			if r.Status != results.StatusSkipped {
				t.Errorf("batch row %s", r.Status)
			}
			continue
		}
		if r.Status != results.StatusOK {
			t.Fatalf("%s %s %s: %s %s", r.Layout, r.Get("copy"), r.Transport, r.Status, r.Reason)
		}
		key := strings.Join([]string{r.Layout, r.Get("copy"), r.Transport, r.Get("path")}, "/")
		ok[key]++
		wantVerified := map[int]string{0: "true", 1: "", 2: "true"}[r.Rep]
		if r.Get("verified") != wantVerified || r.Get("disk") == "" || r.Get("disk_fs") == "" || r.Get("timing") != "clock" {
			t.Errorf("%s rep %d: verified %q disk %q fs %q timing %q", key, r.Rep, r.Get("verified"), r.Get("disk"), r.Get("disk_fs"), r.Get("timing"))
		}
		if cached := strings.HasPrefix(r.Get("path"), "pagecache"); cached != (r.Get("src_mem") == "pagecache") {
			t.Errorf("%s: src_mem %q", key, r.Get("src_mem"))
		}
	}
	for _, l := range []string{"layerwise", "blockwise"} {
		for _, c := range []string{"percopy", "contiguous"} {
			for _, io := range []string{"uring", "pread"} {
				for _, path := range []string{"o_direct", "pagecache"} {
					if n := ok[strings.Join([]string{l, c, io, path}, "/")]; n != 6 {
						t.Errorf("%s %s %s %s: %d ok rows, want 6 (3 reps of 2 prefixes)", l, c, io, path, n)
					}
				}
			}
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "kvtier-disk-*")); len(files) > 0 {
		t.Errorf("the disk tier's file outlived the run: %v", files)
	}
}

// TestSweepDiskRefused runs the disk tier where it cannot write: on
// tmpfs, and on a disk too small for the file; every row is skipped with
// the reason.
func TestSweepDiskRefused(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		dir        func(t *testing.T) string
	}{
		{"tmpfs", "is on tmpfs", func(t *testing.T) string { return disktest.Tmpfs(t, 64<<20) }},
		{"full", "free (it takes at most 90%)", func(t *testing.T) string { return disktest.LoopExt4(t, 4<<20) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := diskOptions(t, "pread", false)
			o.Prefixes = []int{16384} // a 20 MiB file
			o.TierOptions["disk"].(*tiers.DiskOptions).Dir = tc.dir(t)
			_, rows, _, err := runSweep(t, context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if r.Status != results.StatusSkipped || (r.Get("copy") != "batch" && !strings.Contains(r.Reason, tc.want)) {
					t.Errorf("%s %s: %s %q, want skipped: %s", r.Layout, r.Get("copy"), r.Status, r.Reason, tc.want)
				}
			}
		})
	}
}

// TestSweepDiskCUDA runs the disk tier on the cuda backend (the fake
// driver and the fake libcufile): reads through the pinned bounce buffer
// and by cuFile, every copy mode, timed with events, verified.
func TestSweepDiskCUDA(t *testing.T) {
	t.Parallel()
	libs := cudatest.Build(t)
	b, _, err := tiers.OpenBackend(context.Background(), "cuda", tiers.BackendConfig{NUMA: -1,
		LibCUDA: libs.CUDA, LibCUBLAS: libs.CUBLAS, LibCUFile: cufiletest.Build(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, rows, log, err := runSweepOn(t, context.Background(), diskOptions(t, "uring,pread,cufile", false), b)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	paths := map[string]int{}
	for _, r := range rows {
		if r.Status != results.StatusOK || r.Get("timing") != "events" {
			t.Fatalf("%s %s %s: %s %q timing %s", r.Layout, r.Get("copy"), r.Transport, r.Status, r.Reason, r.Get("timing"))
		}
		paths[r.Transport+" "+r.Get("path")]++
	}
	// 2 layouts x 3 copy modes x 2 prefixes x 3 reps each.
	for _, k := range []string{"uring o_direct+bounce", "pread o_direct+bounce", "cufile gpudirect"} {
		if paths[k] != 36 {
			t.Errorf("%s: %d rows, want 36 (all: %v)", k, paths[k], paths)
		}
	}
}
