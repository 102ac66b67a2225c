package tiers

import (
	"context"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/peer"
)

// smallGeometry is a model small enough for quick tests: 4 layers, so a
// block is 8 chunks of 1 KiB in the layer-wise layout.
func smallGeometry() kv.Geometry {
	return kv.Geometry{Model: "tiny", Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 16, Hidden: 64,
		DType: "bfloat16", DTypeBytes: 2, BlockTokens: 16}
}

func TestRemoteEmbeddedLoopback(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	for _, tc := range []struct {
		layout kv.Layout
		copy   CopyMode
	}{{kv.Layerwise, PerCopy}, {kv.Blockwise, PerCopy}, {kv.Layerwise, Contiguous}} {
		t.Run(string(tc.layout)+"/"+string(tc.copy), func(t *testing.T) {
			spec, err := Lookup("remote")
			if err != nil {
				t.Fatal(err)
			}
			if spec.Timing != Blocking || !spec.Moves() {
				t.Fatalf("spec %+v", spec)
			}
			tier := spec.New(Env{Backend: b, Geometry: smallGeometry(), Layout: tc.layout, Copy: tc.copy, Seed: 3, Options: &RemoteOptions{ClientSettings: peer.ClientSettings{Transport: "tcp", Conns: 2, GIDIndex: -1}}})
			defer tier.Close()
			if r := tier.Available(); r != "" {
				t.Fatal(r)
			}
			if err := tier.Setup(context.Background(), 20); err != nil {
				t.Fatal(err)
			}
			p := Prefix{Tokens: 160, Blocks: 10}
			if err := tier.Fetch(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			if err := tier.Verify(p); err != nil {
				t.Fatal(err)
			}
			// After a scrub, verification must fail until the next fetch.
			if err := tier.(Scrubber).Scrub(p); err != nil {
				t.Fatal(err)
			}
			if err := tier.Verify(p); err == nil || !strings.Contains(err.Error(), "block 0 chunk 0") {
				t.Fatalf("verify of a scrubbed pool: %v", err)
			}
			a := tier.Attrs()
			if a["transport"] != "tcp" || a["path"] != "loopback" || a["device"] != "tcp" || a["src_mem"] != "peer" || a["dst_mem"] != "pageable" {
				t.Fatalf("attrs %v", a)
			}
		})
	}
}

func TestRemoteExternalPeer(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	g := smallGeometry()
	pool, err := peer.NewHostPool(int64(kv.PoolSlots(8))*g.BlockBytes(), 99)
	if err != nil {
		t.Fatal(err)
	}
	e, err := peer.StartEmbedded(peer.ServerConfig{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	tier := (&remoteTier{env: Env{Backend: b, Geometry: g, Layout: kv.Layerwise, Copy: PerCopy, Seed: 5}, opts: RemoteOptions{Peer: e.Addr, ClientSettings: peer.ClientSettings{Transport: "tcp", Conns: 1, GIDIndex: -1}}})
	defer tier.Close()
	// A pool too small for 40 blocks is refused by name.
	if err := tier.Setup(context.Background(), 40); err == nil || !strings.Contains(err.Error(), "larger --pool") {
		t.Fatalf("small pool: %v", err)
	}
	if err := tier.Setup(context.Background(), 8); err != nil {
		t.Fatal(err)
	}
	if got := tier.Attrs()["path"]; got != "intra" {
		t.Fatalf("path %q, want intra", got)
	}
	p := Prefix{Tokens: 128, Blocks: 8}
	if err := tier.Fetch(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if err := tier.Verify(p); err != nil {
		t.Fatal(err)
	}
	// The peer goes away: the next fetch fails with an error.
	e.Close()
	if err := tier.Fetch(context.Background(), p); err == nil {
		t.Fatal("fetch from a stopped peer succeeded")
	}
}

func TestRemoteVerbsWithoutDevice(t *testing.T) {
	t.Parallel()
	b := openHost(t)
	tier := (&remoteTier{env: Env{Backend: b, Geometry: smallGeometry(), Layout: kv.Layerwise}, opts: RemoteOptions{ClientSettings: peer.ClientSettings{Transport: "verbs", GIDIndex: -1}}})
	if r := tier.Available(); !strings.Contains(r, "verbs") {
		t.Skipf("this machine has an RDMA device (Available = %q)", r)
	}
}
