package tiers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/csrc/cufilewrap/cufiletest"
	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/pattern"
)

// newDiskStore returns the disk tier's store of variant name (of
// VariantsFor(Store)) with options o.
func newDiskStore(t *testing.T, b Backend, layout kv.Layout, mode CopyMode, o *DiskOptions, name string, shared *Shared, scratch string) *diskTier {
	t.Helper()
	var opts Options
	for _, v := range o.VariantsFor(Store) {
		if v.Name == name {
			opts = v.Options
		}
	}
	if opts == nil {
		t.Fatalf("no store variant %q in %+v", name, o)
	}
	env := Env{Backend: b, Geometry: diskGeometry(), Layout: layout, Copy: mode, Seed: 9, Direction: Store,
		Options: opts, Scratch: scratch, Shared: shared}
	return newTier(t, "disk", env).(*diskTier)
}

// TestDiskStoreHost stores both layouts, both copy modes of the host
// backend and every store variant, verifies the file read back, and
// checks the rows' attributes.
func TestDiskStoreHost(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	o := NewDiskOptions()
	o.IO, o.Cached, o.IODepth = "uring,pread", true, 8
	for _, layout := range kv.Layouts() {
		for _, mode := range []CopyMode{PerCopy, Contiguous} {
			for _, v := range []string{"uring", "uring+fdatasync", "pwrite", "pwrite+fdatasync", "uring-cached", "pwrite-cached+fdatasync"} {
				t.Run(fmt.Sprintf("%s/%s/%s", layout, mode, v), func(t *testing.T) {
					t.Parallel()
					tier := newDiskStore(t, b, layout, mode, o, v, nil, t.TempDir())
					fetchAll(t, tier, 3, 40)
					a := tier.Attrs()
					if a["src_mem"] != "pageable" || (a["dst_mem"] != "disk" && a["dst_mem"] != "pagecache") || a["sync"] == "" {
						t.Errorf("attrs %v", a)
					}
					if a["transport"] == "uring" && (a["iodepth"] != "8" || a["fixed_bufs"] != "true") {
						t.Errorf("io_uring attrs %v, want depth 8 from registered buffers", a)
					}
				})
			}
		}
	}
}

// TestDiskStoreLeavesLoadFileAlone runs a store and a load in one run:
// the store writes a file of its own, so the load's file still holds its
// pattern and both verify.
func TestDiskStoreLeavesLoadFileAlone(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	shared, scratch := NewShared(), t.TempDir()
	defer shared.Close()
	o := NewDiskOptions()
	o.IO = "uring"
	load := newDisk(t, b, kv.Layerwise, PerCopy, o, "uring", shared)
	load.env.Scratch = scratch
	fetchAll(t, load, 4)
	store := newDiskStore(t, b, kv.Layerwise, PerCopy, o, "uring", shared, scratch)
	fetchAll(t, store, 4)
	if store.file.path == load.file.path {
		t.Fatalf("store and load share %s", store.file.path)
	}
	data, err := os.ReadFile(load.file.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pattern.Check(data[:load.fileSize], 9, 0); err != nil {
		t.Errorf("the load's file after a store: %v", err)
	}
	fetchAll(t, load, 4)
}

// TestDiskStoreVariants checks that --sync multiplies the store's
// configurations only, and that cuFile's store on the host backend is a
// skipped row saying why.
func TestDiskStoreVariants(t *testing.T) {
	t.Parallel()
	o := NewDiskOptions()
	o.IO = "uring,cufile"
	var load, store []string
	for _, v := range o.VariantsFor(Load) {
		load = append(load, v.Name)
	}
	for _, v := range o.VariantsFor(Store) {
		store = append(store, v.Name)
	}
	if fmt.Sprint(load) != "[uring cufile]" || fmt.Sprint(store) != "[uring uring+fdatasync cufile cufile+fdatasync]" {
		t.Errorf("variants: load %v, store %v", load, store)
	}
	o.Sync = "none,later"
	if err := o.Validate(); err == nil {
		t.Error("--sync later accepted")
	}
	tier := newDiskStore(t, openHost(t), kv.Layerwise, PerCopy, NewDiskOptions(), "cufile", nil, t.TempDir())
	if r := tier.Available(); !strings.Contains(r, "GPUDirect Storage") || !strings.Contains(r, "--backend cuda") {
		t.Errorf("cufile store on the host backend: Available = %q", r)
	}
}

// TestDiskStoreCUFile stores with GPUDirect Storage on the fake libcuda
// and the fake libcufile: cuFileWrite from GPU memory, both --sync
// values, the file read back and verified; without libcufile the
// configuration is skipped with the reason.
func TestDiskStoreCUFile(t *testing.T) {
	t.Parallel()
	libs := cudatest.Build(t)
	cufile := cufiletest.Build(t)
	open := func(lib string) Backend {
		b, _, err := OpenBackend(context.Background(), "cuda", BackendConfig{NUMA: -1, LibCUDA: libs.CUDA, LibCUBLAS: libs.CUBLAS, LibCUFile: lib})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	b := open(cufile)
	o := NewDiskOptions()
	o.IO, o.IODepth = "cufile", 4
	for _, mode := range []CopyMode{PerCopy, Contiguous} {
		for _, v := range []string{"cufile", "cufile+fdatasync"} {
			tier := newDiskStore(t, b, kv.Layerwise, mode, o, v, nil, t.TempDir())
			fetchAll(t, tier, 2, 12)
			if a := tier.Attrs(); a["path"] != "gpudirect" || a["transport"] != "cufile" || a["dst_mem"] != "disk" || a["iodepth"] != "4" {
				t.Errorf("%s %s: attrs %v", mode, v, a)
			}
			if err := tier.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s := cufiletest.StateOf(t, cufile); s.Open != 0 || s.Buffers != 0 || s.Handles != 0 || s.Writes == 0 || s.Reads != 0 {
		t.Errorf("the fake libcufile after closing: %+v, want writes and nothing open", s)
	}
	missing := open(filepath.Join(t.TempDir(), "libcufile.so.0"))
	tier := newDiskStore(t, missing, kv.Layerwise, PerCopy, o, "cufile", nil, t.TempDir())
	if r := tier.Available(); !strings.HasPrefix(r, "GPUDirect Storage unavailable: ") || !strings.Contains(r, "cannot load libcufile") {
		t.Errorf("cufile store without libcufile: Available = %q", r)
	}
}
