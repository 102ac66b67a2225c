package mesh

import (
	"context"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/xfer"
)

const testToken = "t0ken"

// testRank is one rank of an in-process mesh: a host pool served on
// loopback with the run token, and a Worker on the host backend.
type testRank struct {
	member Member
	worker *Worker
}

func testOptions() xfer.Options {
	o := xfer.DefaultOptions()
	o.Sizes, o.Layouts = []int64{256 << 10, 1 << 20}, []string{xfer.Blockwise}
	o.Policy.Reps, o.Token, o.IdleTimeout = 2, testToken, 2*time.Second
	return o
}

func testConfig(size int) Config {
	o := testOptions()
	s := o.Settings()
	s["world_size"] = string(rune('0' + size))
	return Config{Token: testToken, RendezvousTimeout: 5 * time.Second, IdleTimeout: 2 * time.Second, Settings: s, Log: io.Discard}
}

func newTestRank(t *testing.T, rank, size int, node string, dirs []tiers.Direction) *testRank {
	t.Helper()
	pool, err := peer.NewHostPool(2<<20, uint64(rank+1)*7)
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions()
	o.Directions = dirs
	e, err := peer.StartEmbedded(peer.ServerConfig{Pool: pool, Token: testToken, Writable: o.Stores()})
	if err != nil {
		pool.Close()
		t.Fatal(err)
	}
	be, closeBe, err := xfer.OpenBackends(context.Background(), o, tiers.BackendConfig{NUMA: -1})
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("stop the peer server: %v", err)
		}
		closeBe()
	})
	l := Launch{Launcher: LauncherFlags, Rank: rank, Size: size, Node: node}
	return &testRank{
		member: Member{Launch: l, Addr: e.Addr, Transport: peer.TCP, Mem: peer.HostMem, GPU: -1, NIC: "lo"},
		worker: &Worker{Options: o, Backends: be, Log: io.Discard},
	}
}

// ranksOn returns a test rank on each of nodes, in rank order, that
// loads.
func ranksOn(t *testing.T, nodes ...string) []*testRank {
	t.Helper()
	return ranksDir(t, nil, nodes...)
}

// ranksDir returns a test rank on each of nodes, in rank order, that
// measures dirs (pools writable when they store).
func ranksDir(t *testing.T, dirs []tiers.Direction, nodes ...string) []*testRank {
	t.Helper()
	ranks := make([]*testRank, len(nodes))
	for i, node := range nodes {
		ranks[i] = newTestRank(t, i, len(nodes), node, dirs)
	}
	return ranks
}

// runMesh runs rank 0 as coordinator and the others as ranks (serve
// replaced by join for the ranks in joinOnly), fails the test if Run
// fails, and returns rank 0's results directory.
func runMesh(t *testing.T, ranks []*testRank, pattern string, joinOnly map[int]bool) string {
	t.Helper()
	cfg := testConfig(len(ranks))
	co, err := Listen(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, r := range ranks[1:] {
		wg.Go(func() {
			rk, _, err := DialCoordinator(context.Background(), cfg, co.Addr().String())
			if err != nil {
				t.Errorf("rank %d: %v", r.member.Rank, err)
				return
			}
			defer rk.Close()
			if _, err := rk.Join(context.Background(), r.member); err != nil {
				t.Errorf("rank %d: %v", r.member.Rank, err)
				return
			}
			if joinOnly[r.member.Rank] {
				return // gone: its connection closes
			}
			if err := rk.Serve(context.Background(), r.worker); err != nil {
				t.Errorf("rank %d: %v", r.member.Rank, err)
			}
		})
	}
	if _, err := co.Rendezvous(context.Background(), ranks[0].member); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := harness.CreateOutput(dir, Suite.Name, []string{"kvtier", "mesh"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = co.Run(context.Background(), out, ranks[0].worker, pattern, false)
	wg.Wait()
	if cerr := out.Close(err != nil); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// matrixOf reads mesh_matrix.csv as SRC->DST (load) or "store SRC->DST"
// -> its cells (last size wins).
func matrixOf(t *testing.T, dir string) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, MatrixFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, c := range recs[0] {
			m[c] = rec[i]
		}
		k := m["src_rank"] + "->" + m["dst_rank"]
		if m["direction"] != "load" {
			k = m["direction"] + " " + k
		}
		out[k] = m
	}
	return out
}

func TestMeshPairwise(t *testing.T) {
	t.Parallel()
	dir := runMesh(t, ranksOn(t, "a", "a", "b"), Pairwise, nil)
	m := matrixOf(t, dir)
	want := map[string]string{"0->1": "intra", "1->0": "intra", "0->2": "inter", "2->0": "inter", "1->2": "inter", "2->1": "inter"}
	if len(m) != len(want) {
		t.Fatalf("matrix pairs %v, want %v", m, want)
	}
	for p, pair := range want {
		c := m[p]
		if c["pair"] != pair || c["n"] != "2" || c["verified"] != "true" || c["errors"] != "0" || c["route"] != RouteNet {
			t.Errorf("pair %s: %v, want %s with 2 ok verified reps", p, c, pair)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, RanksFile)); err != nil {
		t.Error(err)
	}
}

func TestMeshRing(t *testing.T) {
	t.Parallel()
	dir := runMesh(t, ranksOn(t, "a", "b", "c"), Ring, nil)
	m := matrixOf(t, dir)
	for _, p := range []string{"1->0", "2->1", "0->2"} {
		if c := m[p]; c == nil || c["pattern"] != Ring || c["n"] != "2" || c["verified"] != "true" {
			t.Errorf("ring pair %s: %v", p, c)
		}
	}
	if len(m) != 3 {
		t.Errorf("ring matrix has %d pairs, want the 3 neighbours: %v", len(m), m)
	}
}

// A rank that joins and then goes away leaves error rows naming it for
// every pair it is in; the other pairs are measured.
func TestMeshRankGone(t *testing.T) {
	t.Parallel()
	dir := runMesh(t, ranksOn(t, "a", "b", "c"), Pairwise, map[int]bool{2: true})
	m := matrixOf(t, dir)
	for _, p := range []string{"0->1", "1->0"} {
		if c := m[p]; c["n"] != "2" || c["errors"] != "0" {
			t.Errorf("pair %s: %v, want measured", p, c)
		}
	}
	for _, p := range []string{"0->2", "2->0", "1->2", "2->1"} {
		if c := m[p]; c == nil || c["errors"] == "0" || !strings.Contains(c["reason"], "rank 2") {
			t.Errorf("pair %s of the gone rank: %v, want error rows naming rank 2", p, c)
		}
	}
}

// With --direction load,store every pair is measured both ways: loads
// (src's pool read by dst) and stores (src writing into dst's pool),
// every row verified, and the matrix has a cell of each direction per
// pair; loads after stores still verify (stores restore the pools).
func TestMeshBothDirections(t *testing.T) {
	t.Parallel()
	for _, pattern := range []string{Pairwise, Ring} {
		t.Run(pattern, func(t *testing.T) {
			t.Parallel()
			dir := runMesh(t, ranksDir(t, []tiers.Direction{tiers.Load, tiers.Store}, "a", "a", "b"), pattern, nil)
			m := matrixOf(t, dir)
			pairs := []string{"0->1", "1->0", "0->2", "2->0", "1->2", "2->1"}
			if pattern == Ring {
				pairs = []string{"1->0", "2->1", "0->2"} // loads: rank i reads rank i+1's pool
			}
			// A store's data goes from the rank measuring into the pool: the
			// load pair turned around.
			turn := func(p string) string { a, b, _ := strings.Cut(p, "->"); return b + "->" + a }
			for _, p := range pairs {
				for _, k := range []string{p, "store " + turn(p)} {
					if c := m[k]; c["n"] != "2" || c["verified"] != "true" || c["errors"] != "0" || c["pattern"] != pattern {
						t.Errorf("cell %s: %v, want 2 ok verified reps", k, c)
					}
				}
			}
			if len(m) != 2*len(pairs) {
				t.Errorf("matrix has %d cells, want %d (every pair both ways): %v", len(m), 2*len(pairs), m)
			}
			rows, _, err := results.ReadCSV(filepath.Join(dir, File))
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, r := range rows {
				count[r.Direction()+" "+r.Get("src_rank")+"->"+r.Get("dst_rank")]++
				if r.Status != results.StatusOK {
					t.Errorf("%s row %s->%s: %s %s", r.Direction(), r.Get("src_rank"), r.Get("dst_rank"), r.Status, r.Reason)
				}
			}
			for _, p := range pairs {
				for _, k := range []string{"load " + p, "store " + turn(p)} {
					if n := count[k]; n != 4 { // 2 sizes × 2 reps
						t.Errorf("%d rows %s, want 4", n, k)
					}
				}
			}
		})
	}
}
