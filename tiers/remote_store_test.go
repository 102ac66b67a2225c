package tiers

import (
	"context"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/rdma/rdmatest"
)

// TestRemoteStoreExternalPeer stores into a kvtier serve --writable
// peer, verifies by reading its pool back, and checks that closing the
// tier writes the peer's pattern back, so that loads from it verify; a
// read-only peer is refused by name.
func TestRemoteStoreExternalPeer(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	g := smallGeometry()
	start := func(writable bool) (*peer.Embedded, *peer.Pool) {
		pool, err := peer.NewHostPool(int64(kv.PoolSlots(8))*g.BlockBytes(), 99)
		if err != nil {
			t.Fatal(err)
		}
		e, err := peer.StartEmbedded(peer.ServerConfig{Pool: pool, Writable: writable})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e, pool
	}
	newStore := func(addr string, mode CopyMode) *remoteTier {
		return &remoteTier{env: Env{Backend: b, Geometry: g, Layout: kv.Layerwise, Copy: mode, Seed: 5, Direction: Store},
			opts: RemoteOptions{Peer: addr, ClientSettings: peer.ClientSettings{Transport: "tcp", Conns: 2, GIDIndex: -1}}}
	}
	ro, _ := start(false)
	tier := newStore(ro.Addr, PerCopy)
	if err := tier.Setup(context.Background(), 8); err == nil || !strings.Contains(err.Error(), "--writable") {
		t.Fatalf("store into a read-only peer: %v", err)
	}
	tier.Close()
	rw, pool := start(true)
	for _, mode := range []CopyMode{PerCopy, Contiguous} {
		tier := newStore(rw.Addr, mode)
		p := storeScrubbed(t, tier)
		if err := tier.Verify(p); err != nil {
			t.Fatal(err)
		}
		if a := tier.Attrs(); a["src_mem"] != "pageable" || a["dst_mem"] != "peer" || a["transport"] != "tcp" {
			t.Errorf("attrs %v", a)
		}
		if err := tier.Close(); err != nil {
			t.Fatal(err)
		}
		if err := pattern.Check(pool.Host(), 99, 0); err != nil {
			t.Fatalf("%s: the peer's pool after the store closed: %v", mode, err)
		}
	}
}

// storeScrubbed sets tier up for 8 blocks, scrubs a prefix of them
// (Verify must then fail) and stores it; the caller verifies.
func storeScrubbed(t *testing.T, tier *remoteTier) Prefix {
	t.Helper()
	if err := tier.Setup(context.Background(), 8); err != nil {
		t.Fatal(err)
	}
	p := Prefix{Tokens: 128, Blocks: 8}
	if err := tier.Scrub(p); err != nil {
		t.Fatal(err)
	}
	if err := tier.Verify(p); err == nil {
		t.Fatal("Verify passed after Scrub")
	}
	if err := tier.Fetch(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRemoteStoreOverVerbs stores into the embedded peer over the fake
// libibverbs (every chunk an RDMA WRITE into the pool, which the
// writable peer registered for remote write) and verifies by reading the
// pool back; over a read-only external verbs peer the store is refused
// by name (--writable).
func TestRemoteStoreOverVerbs(t *testing.T) {
	lib := rdmatest.Build(t)
	b := openHost(t)
	g := smallGeometry()
	for _, mode := range []CopyMode{PerCopy, Contiguous} {
		tier := &remoteTier{env: Env{Backend: b, Geometry: g, Layout: kv.Layerwise, Copy: mode, Seed: 5, Direction: Store},
			opts: RemoteOptions{ClientSettings: peer.ClientSettings{Transport: "verbs", Conns: 2, GIDIndex: -1, Library: lib}}}
		if r := tier.Available(); r != "" {
			t.Fatalf("Available = %q", r)
		}
		p := storeScrubbed(t, tier)
		if err := tier.Verify(p); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if a := tier.Attrs(); a["transport"] != "verbs" || a["dst_mem"] != "peer" {
			t.Errorf("attrs %v", a)
		}
		if err := tier.Close(); err != nil {
			t.Fatal(err)
		}
	}
	pool, err := peer.NewHostPool(int64(kv.PoolSlots(8))*g.BlockBytes(), 99)
	if err != nil {
		t.Fatal(err)
	}
	e, err := peer.StartEmbedded(peer.ServerConfig{Pool: pool, Transport: peer.Verbs, RDMA: rdma.Config{GIDIndex: -1, Root: "/", Library: lib}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tier := &remoteTier{env: Env{Backend: b, Geometry: g, Layout: kv.Layerwise, Seed: 5, Direction: Store},
		opts: RemoteOptions{Peer: e.Addr, ClientSettings: peer.ClientSettings{Transport: "verbs", GIDIndex: -1, Library: lib}}}
	defer tier.Close()
	if err := tier.Setup(context.Background(), 8); err == nil || !strings.Contains(err.Error(), "--writable") {
		t.Fatalf("store into a read-only verbs peer: %v", err)
	}
}
