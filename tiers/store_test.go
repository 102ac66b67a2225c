package tiers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/tiers"
)

func storeGeometry() kv.Geometry {
	return kv.Geometry{Model: "tiny", Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, Hidden: 32, DType: "bfloat16",
		DTypeBytes: 2, BlockTokens: 16, Intermediate: 64}
}

// storeRoundTrip stores a prefix through a tier set up for the Store
// direction and checks that verification reads the destination back:
// it fails before the store and after a scrub, and passes after the
// store. It returns the tier's attributes.
func storeRoundTrip(t *testing.T, name string, env tiers.Env) map[string]string {
	t.Helper()
	spec, err := tiers.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Has(tiers.Store) {
		t.Fatalf("tier %s lists no store direction", name)
	}
	env.Direction = tiers.Store
	tier := spec.New(env)
	t.Cleanup(func() { tier.Close() })
	if r := tier.Available(); r != "" {
		t.Fatalf("unavailable: %s", r)
	}
	ctx := context.Background()
	if err := tier.Setup(ctx, 6); err != nil {
		t.Fatal(err)
	}
	p, one := tiers.Prefix{Tokens: 80, Blocks: 5}, tiers.Prefix{Tokens: 16, Blocks: 1}
	prepare := func(p tiers.Prefix) {
		if pr, ok := tier.(tiers.Preparer); ok {
			if err := pr.Prepare(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tier.Verify(p); err == nil {
		t.Fatal("Verify passed before any store")
	}
	for range 2 {
		prepare(p)
		if err := tier.Fetch(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := tier.Verify(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := tier.(tiers.Scrubber).Scrub(one); err != nil {
		t.Fatal(err)
	}
	if err := tier.Verify(one); err == nil {
		t.Error("Verify passed after Scrub")
	}
	prepare(one)
	if err := tier.Fetch(ctx, one); err != nil {
		t.Fatal(err)
	}
	if err := tier.Verify(one); err != nil {
		t.Errorf("Verify after storing again: %v", err)
	}
	return tier.Attrs()
}

func TestStoreHostBackend(t *testing.T) {
	t.Parallel()
	b, _, err := tiers.OpenBackend(context.Background(), "host", tiers.BackendConfig{NUMA: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, layout := range kv.Layouts() {
		for _, mode := range []tiers.CopyMode{tiers.PerCopy, tiers.Contiguous} {
			for _, mem := range []tiers.MemKind{tiers.Pinned, tiers.Pageable} {
				t.Run(string(layout)+"/"+string(mode)+"/"+string(mem), func(t *testing.T) {
					env := tiers.Env{Backend: b, Geometry: storeGeometry(), Layout: layout, Copy: mode, Seed: 5,
						Options: &tiers.HostOptions{Mem: mem}}
					a := storeRoundTrip(t, "host", env)
					if a["src_mem"] != "pageable" || a["dst_mem"] != string(mem) || !strings.Contains(a["path"], "host stand-in") {
						t.Errorf("Attrs = %v", a)
					}
				})
			}
		}
	}
}

func TestStoreRemoteEmbedded(t *testing.T) {
	t.Parallel()
	b, _, err := tiers.OpenBackend(context.Background(), "host", tiers.BackendConfig{NUMA: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for _, mode := range []tiers.CopyMode{tiers.PerCopy, tiers.Contiguous} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			env := tiers.Env{Backend: b, Geometry: storeGeometry(), Layout: kv.Layerwise, Copy: mode, Seed: 3}
			a := storeRoundTrip(t, "remote", env)
			if a["dst_mem"] != "peer" || a["path"] != "loopback" {
				t.Errorf("Attrs = %v", a)
			}
		})
	}
}

func TestStoreCUDABackend(t *testing.T) {
	b := openFake(t, nil, tiers.BackendConfig{NUMA: -1})
	cases := []struct {
		tier string
		mem  tiers.MemKind
	}{
		{"hbm", tiers.Device},
		{"remote", "peer"},
		{"host", tiers.Pinned},
		{"host", tiers.Pageable},
	}
	for _, c := range cases {
		for _, mode := range tiers.CopyModes() {
			t.Run(c.tier+"/"+string(c.mem)+"/"+string(mode), func(t *testing.T) {
				env := tiers.Env{Backend: b, Geometry: storeGeometry(), Layout: kv.Layerwise, Copy: mode, Seed: 9}
				if c.tier == "host" {
					env.Options = &tiers.HostOptions{Mem: c.mem}
				}
				a := storeRoundTrip(t, c.tier, env)
				if a["src_mem"] != "device" || a["dst_mem"] != string(c.mem) {
					t.Errorf("Attrs = %v", a)
				}
			})
		}
	}
	// The disk tier's store from GPU memory goes through a pinned bounce
	// buffer, downloaded inside the sample.
	for _, mode := range tiers.CopyModes() {
		t.Run("disk/"+string(mode), func(t *testing.T) {
			o := tiers.NewDiskOptions()
			o.IO, o.Sync = "uring", tiers.SyncData
			g := storeGeometry()
			g.HeadDim = 64 // 4 KiB chunks, which O_DIRECT writes on any disk
			env := tiers.Env{Backend: b, Geometry: g, Layout: kv.Layerwise, Copy: mode, Seed: 9, Scratch: t.TempDir(),
				Options: o.VariantsFor(tiers.Store)[0].Options}
			a := storeRoundTrip(t, "disk", env)
			if a["path"] != "o_direct+bounce" || a["sync"] != "fdatasync" || a["dst_mem"] != "disk" {
				t.Errorf("Attrs = %v", a)
			}
		})
	}
}

func TestRecomputeHasNothingToStore(t *testing.T) {
	t.Parallel()
	spec, _ := tiers.Lookup("recompute")
	if spec.Has(tiers.Store) || !spec.Has(tiers.Load) {
		t.Fatal("recompute: want load only")
	}
	if r := spec.NoDirectionReason(tiers.Store); !strings.Contains(r, "nothing to store") {
		t.Errorf("reason %q", r)
	}
}
