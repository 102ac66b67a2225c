package tiers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/kvtier/kvtier/csrc/cufilewrap/cufiletest"
	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/diskio"
	"github.com/kvtier/kvtier/diskio/disktest"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
)

// diskGeometry has 4 KiB chunks, which O_DIRECT reads on any disk.
func diskGeometry() kv.Geometry {
	return kv.Geometry{Model: "disk-test", Layers: 2, KVHeads: 2, HeadDim: 64, DTypeBytes: 2, BlockTokens: 16}
}

// diskVariantOf returns the options of the variant named name of o.
func diskVariantOf(t *testing.T, o *DiskOptions, name string) Options {
	t.Helper()
	for _, v := range o.Variants() {
		if v.Name == name {
			return v.Options
		}
	}
	t.Fatalf("no variant %q in %+v", name, o)
	return nil
}

// newDisk returns the disk tier of variant name with options o (the
// defaults when nil) in a scratch directory of its own.
func newDisk(t *testing.T, b Backend, layout kv.Layout, mode CopyMode, o *DiskOptions, name string, shared *Shared) *diskTier {
	t.Helper()
	if o == nil {
		o = NewDiskOptions()
		o.Cached = true
	}
	env := Env{Backend: b, Geometry: diskGeometry(), Layout: layout, Copy: mode, Seed: 9,
		Options: diskVariantOf(t, o, name), Scratch: t.TempDir(), Shared: shared}
	tier := newTier(t, "disk", env).(*diskTier)
	return tier
}

// fetchAll sets tier up for the largest prefix and fetches and verifies
// each, scrubbing first, as the sweep does.
func fetchAll(t *testing.T, tier *diskTier, blocks ...int) {
	t.Helper()
	if r := tier.Available(); r != "" {
		t.Fatalf("unavailable: %s", r)
	}
	if err := tier.Setup(context.Background(), blocks[len(blocks)-1]); err != nil {
		t.Fatal(err)
	}
	for _, n := range blocks {
		p := Prefix{Tokens: n * 16, Blocks: n}
		if err := tier.Scrub(p); err != nil {
			t.Fatal(err)
		}
		if err := tier.Verify(p); err == nil {
			t.Fatalf("%d blocks: verify passed on a scrubbed pool", n)
		}
		if err := tier.Prepare(p); err != nil {
			t.Fatal(err)
		}
		if err := tier.Fetch(context.Background(), p); err != nil {
			t.Fatalf("%d blocks: %v", n, err)
		}
		if err := tier.Verify(p); err != nil {
			t.Fatalf("%d blocks: %v", n, err)
		}
	}
}

// TestDiskTierHost reads both layouts, every copy mode of the host
// backend and every variant into host memory, and checks the rows'
// attributes.
func TestDiskTierHost(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	for _, layout := range kv.Layouts() {
		for _, mode := range []CopyMode{PerCopy, Contiguous} {
			for _, v := range []string{"uring", "pread", "uring-cached", "pread-cached"} {
				t.Run(fmt.Sprintf("%s/%s/%s", layout, mode, v), func(t *testing.T) {
					t.Parallel()
					tier := newDisk(t, b, layout, mode, nil, v, nil)
					fetchAll(t, tier, 3, 40)
					a := tier.Attrs()
					io, cached := strings.CutSuffix(v, "-cached")
					wantPath, wantSrc := "o_direct", "disk"
					if cached {
						wantPath, wantSrc = "pagecache", "pagecache"
					}
					if a["transport"] != io || a["path"] != wantPath || a["src_mem"] != wantSrc || a["dst_mem"] != "pageable" || a["disk_fs"] == "" || a["disk"] == "" {
						t.Errorf("attrs %v", a)
					}
					if io == diskio.Uring && (a["iodepth"] != "32" || a["fixed_bufs"] != "true") {
						t.Errorf("io_uring attrs %v, want depth 32 with registered buffers", a)
					}
					if io == diskio.Pread && a["iodepth"] != "1" {
						t.Errorf("pread attrs %v, want depth 1", a)
					}
				})
			}
		}
	}
}

// TestDiskFileSharedAndRemoved checks that the configurations of one run
// write the file once and that it is removed when the run ends, and that
// a tier without a run removes its own.
func TestDiskFileSharedAndRemoved(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	shared := NewShared()
	dir := t.TempDir()
	var writes atomic.Int32
	for _, v := range []string{"uring", "pread"} {
		tier := newDisk(t, b, kv.Layerwise, PerCopy, nil, v, shared)
		tier.env.Scratch = dir
		tier.write = func(ctx context.Context, path string, size int64, seed uint64) error {
			writes.Add(1)
			return diskio.Write(ctx, path, size, seed)
		}
		fetchAll(t, tier, 8)
		tier.Close()
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("the file was written %d times, want once", n)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "kvtier-disk-*")); len(files) != 1 {
		t.Errorf("files during the run: %v", files)
	}
	if err := shared.Close(); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "kvtier-disk-*")); len(files) != 0 {
		t.Errorf("files left after the run: %v", files)
	}
	own := newDisk(t, b, kv.Blockwise, PerCopy, nil, "pread", nil)
	fetchAll(t, own, 2)
	own.Close()
	if files, _ := filepath.Glob(filepath.Join(own.env.Scratch, "kvtier-disk-*")); len(files) != 0 {
		t.Errorf("a tier's own file left after Close: %v", files)
	}
}

// TestDiskFileChangedBetweenReps removes or truncates the file between
// samples: the next one fails, naming what happened.
func TestDiskFileChangedBetweenReps(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	for _, change := range []string{"remove", "truncate"} {
		for _, v := range []string{"uring", "pread-cached"} {
			t.Run(change+"/"+v, func(t *testing.T) {
				t.Parallel()
				tier := newDisk(t, b, kv.Layerwise, PerCopy, nil, v, nil)
				fetchAll(t, tier, 4)
				var err error
				if change == "remove" {
					err = os.Remove(tier.file.path)
				} else {
					err = os.Truncate(tier.file.path, 4096)
				}
				if err != nil {
					t.Fatal(err)
				}
				p := Prefix{Tokens: 64, Blocks: 4}
				want := map[string]string{"remove": "was removed", "truncate": "was truncated to 4096 bytes"}[change]
				if err := tier.Prepare(p); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Prepare: %v, want %q", err, want)
				}
				if change == "truncate" {
					if err := tier.Fetch(context.Background(), p); err == nil || !strings.Contains(err.Error(), "shorter than expected") {
						t.Errorf("Fetch of a truncated file: %v", err)
					}
				}
			})
		}
	}
}

// TestDiskPrepareDropsPages checks that before each sample the file's
// pages leave the page cache, except for the cached variant.
func TestDiskPrepareDropsPages(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	for _, v := range []string{"uring", "pread-cached"} {
		tier := newDisk(t, b, kv.Blockwise, PerCopy, nil, v, nil)
		fetchAll(t, tier, 6)
		if _, err := os.ReadFile(tier.file.path); err != nil {
			t.Fatal(err)
		}
		if disktest.Resident(t, tier.file.path) == 0 {
			t.Skip("a buffered read cached nothing here")
		}
		if err := tier.Prepare(Prefix{Tokens: 96, Blocks: 6}); err != nil {
			t.Fatal(err)
		}
		n := disktest.Resident(t, tier.file.path)
		if cached := strings.HasSuffix(v, "-cached"); (n == 0) == cached {
			t.Errorf("%s: %d pages cached after Prepare", v, n)
		}
	}
}

// TestDiskUnavailable covers the reasons a configuration is skipped.
func TestDiskUnavailable(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	tier := newDisk(t, b, kv.Layerwise, PerCopy, nil, "uring", nil)
	tier.env.Scratch = ""
	if r := tier.Available(); !strings.Contains(r, "give --disk-dir") {
		t.Errorf("no directory: %q", r)
	}
	for _, errno := range []syscall.Errno{syscall.ENOSYS, syscall.EPERM} {
		tier := newDisk(t, b, kv.Layerwise, PerCopy, nil, "uring", nil)
		tier.newReader = func(string, int, []byte) (diskio.Reader, error) {
			return nil, fmt.Errorf("%w (io_uring_setup: %v)", diskio.ErrRefused, errno)
		}
		if r := tier.Available(); !strings.Contains(r, "io_uring refused") || !strings.Contains(r, errno.Error()) || !strings.Contains(r, "--io pread") {
			t.Errorf("io_uring refused with %v: %q", errno, r)
		}
	}
	odd := newDisk(t, b, kv.Layerwise, PerCopy, nil, "pread", nil)
	odd.env.Geometry.HeadDim = 60 // 3840-byte chunks
	if r := odd.Available(); !strings.Contains(r, "O_DIRECT cannot read them") {
		t.Errorf("unaligned chunks: %q", r)
	}
	if r := newDisk(t, b, kv.Layerwise, PerCopy, nil, "cufile", nil).Available(); !strings.Contains(r, "the host backend has none") {
		t.Errorf("cufile on the host backend: %q", r)
	}
}

// TestDiskOnTmpfs refuses a directory on tmpfs.
func TestDiskOnTmpfs(t *testing.T) {
	dir := disktest.Tmpfs(t, 8<<20)
	o := NewDiskOptions()
	o.Dir = dir
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	tier := newDisk(t, openHost(t), kv.Layerwise, PerCopy, o, "pread", nil)
	if r := tier.Available(); !strings.Contains(r, "is on tmpfs") || !strings.Contains(r, "not a disk") {
		t.Errorf("tmpfs: %q", r)
	}
}

// TestDiskFull checks the free-space refusal before writing and a disk
// that fills while the file is written (another writer takes the space
// between the check and the write).
func TestDiskFull(t *testing.T) {
	dir := disktest.LoopExt4(t, 24<<20)
	o := NewDiskOptions()
	o.Dir = dir
	tier := newDisk(t, openHost(t), kv.Layerwise, PerCopy, o, "pread", nil)
	if r := tier.Available(); r != "" {
		t.Fatal(r)
	}
	if r := tier.FitReason(4096); !strings.Contains(r, "free") || !strings.Contains(r, dir) {
		t.Errorf("a file larger than the disk: %q", r)
	}
	const blocks = 400 // 500 slots of 16 KiB: 8 MiB
	if r := tier.FitReason(blocks); r != "" {
		t.Fatalf("a file that fits: %q", r)
	}
	tier.write = func(ctx context.Context, path string, size int64, seed uint64) error {
		if err := diskio.Write(ctx, filepath.Join(dir, "other-writer"), 1<<30, 1); !errors.Is(err, diskio.ErrNoSpace) {
			return fmt.Errorf("filler: %v", err)
		}
		return diskio.Write(ctx, path, size, seed)
	}
	err := tier.Setup(context.Background(), blocks)
	if !errors.Is(err, diskio.ErrNoSpace) {
		t.Fatalf("Setup on a disk that fills: %v, want ErrNoSpace", err)
	}
	o.Max = "1MiB"
	limited := newDisk(t, openHost(t), kv.Layerwise, PerCopy, o, "pread", nil)
	if r := limited.FitReason(blocks); !strings.Contains(r, "more than --disk-max 1 MiB") {
		t.Errorf("--disk-max: %q", r)
	}
}

func TestDiskOptions(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		o      DiskOptions
		fields string
	}{
		{DiskOptions{IO: "uring,pread,cufile", IODepth: 32}, ""},
		{DiskOptions{IO: "aio", IODepth: 0, Max: "lots", Dir: file}, "io,iodepth,disk-max,disk-dir"},
		{DiskOptions{IO: " ,", IODepth: 5000, Max: "-1", Dir: "/nonexistent/x"}, "io,iodepth,disk-max,disk-dir"},
	} {
		got := option.Fields(tc.o.Validate())
		if strings.Join(got, ",") != tc.fields {
			t.Errorf("%+v: fields %v, want %s", tc.o, got, tc.fields)
		}
	}
	o := NewDiskOptions()
	o.IO, o.Cached = "pread,uring,pread,cufile", true
	var names []string
	for _, v := range o.Variants() {
		names = append(names, v.Name)
	}
	if strings.Join(names, ",") != "pread,uring,cufile,pread-cached,uring-cached" {
		t.Errorf("variants %v", names)
	}
}

// TestDiskTierCUDA reads into GPU memory on the fake driver: through the
// pinned bounce buffer with io_uring and pread, and with cuFile on the
// fake libcufile.
func TestDiskTierCUDA(t *testing.T) {
	t.Parallel()
	libs := cudatest.Build(t)
	cufile := cufiletest.Build(t)
	b, _, err := OpenBackend(context.Background(), "cuda", BackendConfig{NUMA: -1, LibCUDA: libs.CUDA, LibCUBLAS: libs.CUBLAS, LibCUFile: cufile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, mode := range []CopyMode{PerCopy, Batch, Contiguous} {
		for _, v := range []string{"uring", "pread", "cufile"} {
			tier := newDisk(t, b, kv.Layerwise, mode, nil, v, nil)
			fetchAll(t, tier, 2, 12)
			want := map[string]string{"uring": "o_direct+bounce", "pread": "o_direct+bounce", "cufile": "gpudirect"}[v]
			if a := tier.Attrs(); a["path"] != want || a["transport"] != v || v == "cufile" && (a["gds_mode"] != "compatibility" || !strings.Contains(a["gds_reason"], "nvidia-fs 0.0")) {
				t.Errorf("%s %s: attrs %v, want path %s", mode, v, a, want)
			}
			if err := tier.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s := cufiletest.StateOf(t, cufile); s.Open != 0 || s.Buffers != 0 || s.Handles != 0 || s.Reads == 0 {
		t.Errorf("the fake libcufile after closing: %+v", s)
	}
}

// TestDiskCUFileFailures fails each cuFile call in turn on the cuda
// backend: where it surfaces (a skipped configuration, a failed set-up,
// a failed sample, a failed close) and that it is named.
func TestDiskCUFileFailures(t *testing.T) {
	t.Parallel()
	libs := cudatest.Build(t)
	for _, tc := range []struct{ sym, at string }{
		{"missing", "available"}, {"cuFileDriverOpen", "available"}, {"cuFileBufRegister", "setup"},
		{"cuFileHandleRegister", "fetch"}, {"cuFileRead", "fetch"}, {"cuFileBufDeregister", "close"}, {"cuFileDriverClose", "available"},
	} {
		t.Run(tc.sym, func(t *testing.T) {
			t.Parallel()
			cufile := cufiletest.Build(t)
			if tc.sym == "missing" {
				cufile = filepath.Join(t.TempDir(), "libcufile.so.0")
			}
			b, _, err := OpenBackend(context.Background(), "cuda", BackendConfig{NUMA: -1, LibCUDA: libs.CUDA, LibCUBLAS: libs.CUBLAS, LibCUFile: cufile})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			tier := newDisk(t, b, kv.Blockwise, PerCopy, nil, "cufile", nil)
			if tc.sym != "missing" {
				if err := diskio.ProbeGDS(cufile, diskio.DeviceContext{}); err != nil {
					t.Fatal(err)
				}
				cufiletest.Fail(t, cufile, tc.sym, 5030)
			}
			err = diskCUFileRun(tier)
			want := tc.sym
			if tc.sym == "missing" {
				want = "cannot load libcufile"
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.at+": ") || !strings.Contains(err.Error(), want) {
				t.Errorf("%v, want a failure at %s naming %s", err, tc.at, want)
			}
		})
	}
}

// diskCUFileRun runs one configuration and returns its first failure as
// "step: error".
func diskCUFileRun(tier *diskTier) error {
	if r := tier.Available(); r != "" {
		return errors.New("available: " + r)
	}
	if err := tier.Setup(context.Background(), 4); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	p := Prefix{Tokens: 64, Blocks: 4}
	if err := tier.Fetch(context.Background(), p); err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	if err := tier.Verify(p); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if err := tier.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}
