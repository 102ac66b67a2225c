package xfer

import (
	"strings"
	"testing"

	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
)

// TestTransferStore pushes every layout into the embedded peer and into
// a kvtier serve --writable peer: store rows say so, are verified, and
// leave the external peer's pool as it was; a read-only peer's store
// rows are errors naming --writable, and its loads still run.
func TestTransferStore(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Sizes, o.Policy.Reps, o.Policy.Warmup = []int64{1 << 20}, 2, 0
	o.Directions = []tiers.Direction{tiers.Load, tiers.Store}
	pool, err := peer.NewHostPool(4<<20, 17)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := peer.StartEmbedded(peer.ServerConfig{Pool: pool, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	ropool, _ := peer.NewHostPool(4<<20, 17)
	ro, err := peer.StartEmbedded(peer.ServerConfig{Pool: ropool})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	o.Peers = []string{rw.Addr, ro.Addr}
	rows, _ := runTransfer(t, o, tiers.BackendConfig{NUMA: -1})
	count := map[string]int{}
	for _, r := range rows {
		peerName, dir := r.Get("peer"), r.Get(results.DirectionColumn)
		count[dir+" "+string(r.Status)+" "+map[bool]string{true: "rw", false: "ro"}[peerName == rw.Addr]]++
		if dir == "store" && r.Status == results.StatusOK && (r.Get("verified") != "true" || r.Get("src_mem") != "host" || r.Get("dst_mem") != "host") {
			t.Errorf("store row: verified %q src %q dst %q", r.Get("verified"), r.Get("src_mem"), r.Get("dst_mem"))
		}
		if dir == "store" && peerName == ro.Addr && !strings.Contains(r.Reason, "--writable") {
			t.Errorf("store into a read-only peer: %s %q", r.Status, r.Reason)
		}
	}
	if count["store ok rw"] != 6 || count["load ok rw"] != 6 || count["load ok ro"] != 6 || count["store error ro"] == 0 {
		t.Errorf("rows by direction, status and peer: %v", count)
	}
	if err := pattern.Check(pool.Host(), 17, 0); err != nil {
		t.Errorf("the writable peer's pool after the stores: %v", err)
	}
}
