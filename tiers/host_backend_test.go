package tiers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/pattern"
)

func openHost(t *testing.T) Backend {
	t.Helper()
	b, _, err := OpenBackend(context.Background(), "host", BackendConfig{NUMA: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func alloc(t *testing.T, b Backend, kind MemKind, size int64) Buffer {
	t.Helper()
	buf, err := b.Alloc(kind, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { buf.Close() })
	return buf
}

func TestHostBackendBasics(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	if b.Name() != "host" || !strings.Contains(b.Device(), "host stand-in") || b.ComputeDType() != "fp32" || b.LinkGBps(Pinned, Device) != 0 {
		t.Errorf("host backend: name %q device %q dtype %q", b.Name(), b.Device(), b.ComputeDType())
	}
	if got := b.CopyModes(); len(got) != 2 || got[0] != PerCopy || got[1] != Contiguous {
		t.Errorf("CopyModes = %v", got)
	}
	buf := alloc(t, b, Device, 10000)
	if buf.Size() != 10000 || buf.Kind() != Device || len(buf.Host()) != 10000 || buf.Addr()%4096 != 0 {
		t.Errorf("buffer: size %d kind %s addr %#x", buf.Size(), buf.Kind(), buf.Addr())
	}
	if _, err := buf.WriteAt([]byte{1, 2, 3}, 9998); err == nil {
		t.Error("WriteAt past the end succeeded")
	}
	if _, err := buf.WriteAt([]byte{7, 8}, 100); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 2)
	if _, err := buf.ReadAt(p, 100); err != nil || p[0] != 7 || p[1] != 8 {
		t.Errorf("ReadAt = %v, %v", p, err)
	}
	if _, err := b.Alloc("hbm", 10); err == nil {
		t.Error("Alloc of an unknown kind succeeded")
	}
	if err := buf.Close(); err != nil {
		t.Fatal(err)
	}
	if err := buf.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestHostBackendCopy(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	const size = 1 << 16
	src := alloc(t, b, Pinned, size)
	dst := alloc(t, b, Device, size)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range src.Host() {
		src.Host()[i] = byte(r.Uint32())
	}
	plan := []kv.Copy{{Dst: 0, Src: 4096, Bytes: 100}, {Dst: 8000, Src: 17, Bytes: 3000}, {Dst: size - 5, Src: size - 5, Bytes: 5}}
	if err := b.Copy(dst, src, plan, PerCopy); err != nil {
		t.Fatal(err)
	}
	for _, c := range plan {
		if !bytes.Equal(dst.Host()[c.Dst:c.Dst+c.Bytes], src.Host()[c.Src:c.Src+c.Bytes]) {
			t.Errorf("percopy chunk %+v differs", c)
		}
	}
	// Bytes outside the plan are untouched (zero).
	if dst.Host()[100] != 0 || dst.Host()[7999] != 0 {
		t.Error("percopy wrote outside its plan")
	}

	// Contiguous: one span of the summed payload from the first offsets.
	dst2 := alloc(t, b, Device, size)
	if err := b.Copy(dst2, src, plan, Contiguous); err != nil {
		t.Fatal(err)
	}
	span, _ := kv.ContiguousSpan(plan, size, size)
	if span.Bytes != 3105 || span.Src != 4096 || span.Dst != 0 {
		t.Errorf("span = %+v", span)
	}
	if !bytes.Equal(dst2.Host()[:3105], src.Host()[4096:4096+3105]) || dst2.Host()[3105] != 0 {
		t.Error("contiguous copy differs")
	}

	if err := b.Copy(dst, src, plan, Batch); err == nil || !strings.Contains(err.Error(), "cuMemcpyBatchAsync") {
		t.Errorf("batch: err = %v", err)
	}
	if err := b.Copy(dst, src, []kv.Copy{{Dst: size - 1, Src: 0, Bytes: 2}}, PerCopy); err == nil {
		t.Error("out-of-range plan succeeded")
	}
}

func TestHostBackendGEMMsAndTimer(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	ops := []kv.GEMM{{Name: "a", M: 1500, N: 8, K: 16, Batch: 2}, {Name: "b", M: 4, N: 64, K: 3}}
	tm := b.Timer(Queued)
	if _, err := tm.Stop(); err == nil {
		t.Error("Stop before Start succeeded")
	}
	if err := tm.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.GEMMs(ops); err != nil {
		t.Fatal(err)
	}
	s, err := tm.Stop()
	if err != nil || s <= 0 {
		t.Errorf("Stop = %v, %v", s, err)
	}
	if err := b.GEMMs([]kv.GEMM{{Name: "z", M: 0, N: 1, K: 1}}); err == nil {
		t.Error("zero-sized GEMM accepted")
	}
	if got := (kv.GEMM{M: 2, N: 3, K: 4, Batch: 5}).FLOPs(); got != 240 {
		t.Errorf("FLOPs = %v", got)
	}
}

// A tiny model: 2 layers, 2 KV heads of dim 8, bf16 → 2·2·8·2 = 64 B per
// token and layer, 128 B per token, 2048 B per 16-token block, 4 chunks of
// 512 B layer-wise.
func tinyGeometry() kv.Geometry {
	return kv.Geometry{Model: "tiny", Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, Hidden: 32, DType: "bfloat16",
		DTypeBytes: 2, BlockTokens: 16, Intermediate: 64}
}

func newTier(t *testing.T, name string, env Env) Tier {
	t.Helper()
	spec, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	tier := spec.New(env)
	t.Cleanup(func() { tier.Close() })
	return tier
}

func TestGatherTierFetchVerify(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	for _, layout := range kv.Layouts() {
		for _, mode := range []CopyMode{PerCopy, Contiguous} {
			t.Run(string(layout)+"/"+string(mode), func(t *testing.T) {
				env := Env{Backend: b, Geometry: tinyGeometry(), Layout: layout, Copy: mode, Options: &HostOptions{Mem: Pageable}, Seed: 7}
				tier := newTier(t, "host", env)
				if r := tier.Available(); r != "" {
					t.Fatalf("host tier unavailable: %s", r)
				}
				if err := tier.Setup(context.Background(), 10); err != nil {
					t.Fatal(err)
				}
				p := Prefix{Tokens: 100, Blocks: 7}
				// Before any fetch the scrubbed working pool must fail.
				if err := tier.Verify(p); err == nil {
					t.Fatal("Verify passed before any Fetch")
				}
				if err := tier.Fetch(context.Background(), p); err != nil {
					t.Fatal(err)
				}
				if err := tier.Verify(p); err != nil {
					t.Fatal(err)
				}
				if err := tier.(Scrubber).Scrub(Prefix{Tokens: 16, Blocks: 1}); err != nil {
					t.Fatal(err)
				}
				if err := tier.Verify(Prefix{Tokens: 16, Blocks: 1}); err == nil {
					t.Error("Verify passed after Scrub")
				}
				// Scrub(p) covers what a Fetch of p writes, no less: the
				// blocks beyond the first still verify.
				if mode != Contiguous {
					if err := tier.Verify(p); err == nil || !strings.Contains(err.Error(), "block 0") {
						t.Errorf("Verify of the larger prefix after Scrub of one block: %v", err)
					}
				}
				if err := tier.Fetch(context.Background(), Prefix{Blocks: 11}); err == nil {
					t.Error("Fetch beyond the set-up blocks succeeded")
				}
				a := tier.Attrs()
				if a["copy"] != string(mode) || a["src_mem"] != "pageable" || a["dst_mem"] != "pageable" || !strings.Contains(a["path"], "dram-to-dram") {
					t.Errorf("Attrs = %v", a)
				}
				want := int64(kv.PoolSlots(10)+10) * 2048
				if got := tier.(Sizer).SetupBytes(10); got != want {
					t.Errorf("SetupBytes = %d, want %d", got, want)
				}
			})
		}
	}
}

// A plan that copies the wrong chunk must fail verification.
func TestVerifyCatchesWrongChunk(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	env := Env{Backend: b, Geometry: tinyGeometry(), Layout: kv.Layerwise, Copy: PerCopy, Options: &HostOptions{Mem: Pinned}, Seed: 3}
	tier := newTier(t, "host", env).(*gatherTier)
	if err := tier.Setup(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	p := Prefix{Tokens: 64, Blocks: 4}
	bad := append([]kv.Copy(nil), tier.plan[:16]...)
	// Block 2, chunk 1 reads chunk 2's source instead.
	bad[2*4+1].Src = bad[2*4+2].Src
	if err := b.Copy(tier.dst, tier.src, bad, PerCopy); err != nil {
		t.Fatal(err)
	}
	err := tier.Verify(p)
	var mm *pattern.Mismatch
	if err == nil || !errors.As(err, &mm) || !strings.Contains(err.Error(), "block 2 chunk 1") {
		t.Fatalf("Verify = %v, want a mismatch at block 2 chunk 1", err)
	}
	// The right plan passes.
	if err := tier.Fetch(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if err := tier.Verify(p); err != nil {
		t.Fatal(err)
	}
}

func TestHBMUnavailableOnHost(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	tier := newTier(t, "hbm", Env{Backend: b, Geometry: tinyGeometry(), Layout: kv.Layerwise, Copy: PerCopy})
	if r := tier.Available(); !strings.Contains(r, "no device memory on the host backend") {
		t.Errorf("hbm Available = %q", r)
	}
}

// TestHostReadWriteAt: the ReaderAt and WriterAt of every backend's host
// buffers refuse what falls outside, before touching a byte, and name the
// buffer; a read running off the end returns what there is and io.EOF.
func TestHostReadWriteAt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		write   bool
		closed  bool
		n       int
		off     int64
		wantN   int
		wantErr string
	}{
		{"read inside", false, false, 4, 4, 4, ""},
		{"read to the end", false, false, 4, 6, 2, "EOF"},
		{"read at the end", false, false, 1, 8, 0, "EOF"},
		{"read past the end", false, false, 1, 9, 0, "read at 9 outside 8 bytes"},
		{"read before the start", false, false, 1, -1, 0, "read at -1 outside"},
		{"read closed", false, true, 1, 0, 0, "buf: closed"},
		{"write inside", true, false, 4, 4, 4, ""},
		{"write past the end", true, false, 4, 5, 0, "write of 4 bytes at 5 outside 8 bytes"},
		{"write at an offset that overflows", true, false, 4, math.MaxInt64 - 1, 0, "outside 8 bytes"},
		{"write before the start", true, false, 1, -1, 0, "outside"},
		{"write closed", true, true, 1, 0, 0, "buf: closed"},
	}
	for _, tt := range tests {
		h := []byte("01234567")
		if tt.closed {
			h = nil
		}
		p := bytes.Repeat([]byte{'x'}, tt.n)
		var n int
		var err error
		if tt.write {
			n, err = hostWriteAt("buf", h, p, tt.off)
		} else {
			n, err = hostReadAt("buf", h, p, tt.off)
		}
		if n != tt.wantN || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: n %d, err %v; want %d, %q", tt.name, n, err, tt.wantN, tt.wantErr)
		}
		if tt.write && err != nil && !tt.closed && string(h) != "01234567" {
			t.Errorf("%s: a refused write changed the buffer to %q", tt.name, h)
		}
	}
}

// TestNUMAPlacementFallback: a pool that fits in its NUMA node's free
// memory is bound there; one that does not is only preferred there (a
// strict bind would get the process OOM-killed while its pages are
// faulted in), with a warning, and the host tier's rows record where
// the pool went.
func TestNUMAPlacementFallback(t *testing.T) {
	probe, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(probe)
	if err := mbind(probe, 0, mpolPreferred); err != nil {
		t.Skipf("mbind refused here: %v", err)
	}
	for _, tc := range []struct {
		freeKB int
		want   string
		warns  bool
	}{
		{1 << 20, "node0", false},
		{0, "node0 preferred (4 MiB did not fit in its 0 B free)", true},
	} {
		root := t.TempDir()
		dir := filepath.Join(root, "sys/devices/system/node/node0")
		os.MkdirAll(dir, 0o755)
		text := fmt.Sprintf("Node 0 MemTotal: 1048576 kB\nNode 0 MemFree: %d kB\nNode 0 Inactive(file): %d kB\n", tc.freeKB, tc.freeKB/4)
		if err := os.WriteFile(filepath.Join(dir, "meminfo"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		b, _, err := OpenBackend(context.Background(), "host", BackendConfig{NUMA: 0, Root: root, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		buf, err := b.Alloc(Pinned, 4<<20)
		if err != nil {
			t.Fatal(err)
		}
		if got := buf.(Placed).Placement(); got != tc.want {
			t.Errorf("free %d kB: placement %q, want %q", tc.freeKB, got, tc.want)
		}
		if warned := strings.Contains(log.String(), "too little for a 4 MiB pool"); warned != tc.warns {
			t.Errorf("free %d kB: warning %q", tc.freeKB, log.String())
		}
		env := Env{Backend: b, Geometry: tinyGeometry(), Layout: kv.Layerwise, Copy: PerCopy, Options: &HostOptions{Mem: Pinned}, Seed: 7}
		tier := newTier(t, "host", env)
		if err := tier.Setup(context.Background(), 10); err != nil {
			t.Fatal(err)
		}
		if a := tier.Attrs(); a["numa_placement"] != "node0" && !tc.warns || !strings.HasPrefix(a["numa_placement"], "node0 preferred") && tc.warns {
			t.Errorf("free %d kB: row's numa_placement %q", tc.freeKB, a["numa_placement"])
		}
		tier.Close()
		b.Close()
	}
}
