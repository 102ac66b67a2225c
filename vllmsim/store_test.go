package vllmsim

import (
	"math"
	"testing"

	"github.com/kvtier/kvtier/kv"
)

// The CPU store's copies queue on the device-to-host direction: a block
// is found only once its copy is complete.
func TestCPUPoolStoreTakesTime(t *testing.T) {
	t.Parallel()
	c := newCPUPool(8)
	hs := []blockHash{1, 2, 3}
	for _, h := range hs {
		c.store(h, 0, 1) // one second each, one after the other
	}
	for _, tc := range []struct {
		now  float64
		want int
	}{{0.5, 0}, {1, 1}, {2.5, 2}, {3, 3}} {
		if got := c.match(hs, tc.now); got != tc.want {
			t.Errorf("at %.1f s: %d blocks stored, want %d", tc.now, got, tc.want)
		}
	}
	c.store(4, 10, 1) // an idle direction starts at once
	if c.match([]blockHash{4}, 10.5) != 0 || c.match([]blockHash{4}, 11) != 1 {
		t.Errorf("a store queued at 10 s on an idle direction is not complete at 11 s")
	}
}

// storeRun sends prompt A, then B (which evicts A from a GPU pool too small
// for both), then A again at again, then B' at 19.7 s evicting it again and A a
// third time at 20 s, to an engine whose CPU store takes storeGBps; it
// returns the external hits (tokens) and TTFTs of A's second and third
// sends.
func storeRun(t *testing.T, storeGBps, again float64) (hit2, hit3 int, ttft2, ttft3 float64) {
	t.Helper()
	g, err := kv.LookupModel("qwen3-coder-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	p := h20
	p.HostStoreGBps = storeGBps
	e := newEngine(engineConfig{blockSize: 16, gpuBlocks: 300, cpuBlocks: 4096, budget: 8192, vocabWords: len(words), seed: 1, cost: newCostModel(g, p)})
	a := seqPrompt(1, 4096)
	cs := []*vclient{
		{sent: 0, r: e.newRequest("a1", a, 1, "")},
		{sent: 0.5, r: e.newRequest("b1", seqPrompt(100000, 4096), 1, "")},
		{sent: again, r: e.newRequest("a2", a, 1, "")},
		{sent: 19.7, r: e.newRequest("b2", seqPrompt(200000, 4096), 1, "")},
		{sent: 20, r: e.newRequest("a3", a, 1, "")},
	}
	runVirtual(t, e, cs, nil)
	return cs[2].r.firstExt, cs[4].r.firstExt, ttft(cs[2]), ttft(cs[4])
}

// kvtier sim stores offloaded blocks over the device-to-host direction:
// a prefix sent again before its store completed is not found in CPU
// memory, and loads do not wait for stores (PCIe is full duplex).
func TestEngineHostStoreDirection(t *testing.T) {
	t.Parallel()
	fastHit, _, _, _ := storeRun(t, h20.HostStoreGBps, 1)
	// 0.2 GB/s: A's 256 blocks (0.4 GB) take 2 s to store.
	slowHit, slowLate, _, slowTTFT := storeRun(t, 0.2, 1)
	_, fastLate, _, fastTTFT := storeRun(t, h20.HostStoreGBps, 1)
	t.Logf("A again at 1 s: %d tokens from CPU with the h20 store, %d with a 0.2 GB/s store; at 20 s: %d and %d, TTFT %.4f and %.4f s",
		fastHit, slowHit, fastLate, slowLate, fastTTFT, slowTTFT)
	if fastHit == 0 || slowHit >= fastHit/2 {
		t.Errorf("A again 1 s later: %d tokens from CPU with a 0.2 GB/s store against %d at %.0f GB/s: the store took no time", slowHit, fastHit, h20.HostStoreGBps)
	}
	if slowLate != fastLate || slowLate == 0 {
		t.Errorf("A at 20 s, its store long complete: %d tokens from CPU (slow store) against %d", slowLate, fastLate)
	}
	// B2's 2 s of stores are in flight when A is loaded at 20 s: the load
	// does not wait for them.
	if math.Abs(slowTTFT/fastTTFT-1) > 0.01 {
		t.Errorf("A at 20 s: TTFT %.4f s beside stores in flight, %.4f s without: the load waited for the other direction", slowTTFT, fastTTFT)
	}
}
