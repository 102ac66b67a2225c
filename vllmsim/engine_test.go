package vllmsim

import (
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/kvtier/kvtier/kv"
)

// A vclient is one request of a virtual-time scenario: sent by its client
// at sent (modeled seconds).
type vclient struct {
	sent   float64
	r      *request
	tokens []float64 // modeled arrival time of each token
	done   bool
}

// runVirtual drives e in modeled time with the simulator's virtual run
// until every client is done or stop says so, and copies the tokens back.
func runVirtual(t *testing.T, e *engine, clients []*vclient, stop func() bool) {
	t.Helper()
	v := &virtualRun{e: e}
	qs := make([]*vreq, len(clients))
	for i, c := range clients {
		qs[i] = v.add(c.sent, c.r)
	}
	sync := func() {
		for i, c := range clients {
			c.tokens, c.done = qs[i].tokens, qs[i].done
		}
	}
	err := v.run(func() bool {
		sync()
		return stop != nil && stop()
	})
	if err != nil {
		t.Fatal(err)
	}
	sync()
}

func testEngine(t *testing.T, gpuBlocks, cpuBlocks int) *engine {
	t.Helper()
	return testEngineOf(t, gpuBlocks, cpuBlocks, h20)
}

// testEngineOf is testEngine with profile p.
func testEngineOf(t *testing.T, gpuBlocks, cpuBlocks int, p Profile) *engine {
	t.Helper()
	g, err := kv.LookupModel("qwen3-coder-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	return newEngine(engineConfig{
		blockSize: 16, gpuBlocks: gpuBlocks, cpuBlocks: cpuBlocks, budget: 8192,
		vocabWords: len(words), seed: 1, cost: newCostModel(g, p),
	})
}

// seqPrompt returns n tokens starting at base.
func seqPrompt(base, n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = 1000 + (base*7919+i)%100000
	}
	return p
}

func ttft(c *vclient) float64 { return c.tokens[0] - c.sent }

// The engine, stepped in modeled time, agrees with the closed form the
// cost table is checked against, for a miss, a GPU hit and a CPU hit.
func TestEngineMatchesCostModel(t *testing.T) {
	const L = 32768
	e := testEngine(t, 4096, 8192)
	a := &vclient{sent: 0, r: e.newRequest("a", seqPrompt(1, L), 1, "")}
	runVirtual(t, e, []*vclient{a}, nil)
	within(t, "engine miss 32k", ttft(a), e.cost.estimateTTFT(tierMiss, L, 16, 8192, 0), 0.01)

	b := &vclient{sent: e.vt + 1, r: e.newRequest("b", seqPrompt(1, L), 1, "")}
	runVirtual(t, e, []*vclient{b}, nil)
	within(t, "engine gpu hit 32k", ttft(b), e.cost.estimateTTFT(tierGPU, L, 16, 8192, 0), 0.01)
	if b.r.localHit != (L-1)/16*16 || b.r.extHit != 0 {
		t.Errorf("gpu hit: local %d ext %d", b.r.localHit, b.r.extHit)
	}

	// Flood the GPU pool (4096 blocks = 64k tokens) with two other 32k
	// prompts: the first prompt's blocks are evicted, the CPU store keeps
	// them.
	f1 := &vclient{sent: e.vt + 1, r: e.newRequest("f1", seqPrompt(2, L), 1, "")}
	f2 := &vclient{sent: e.vt + 30, r: e.newRequest("f2", seqPrompt(3, L), 1, "")}
	runVirtual(t, e, []*vclient{f1, f2}, nil)
	c := &vclient{sent: e.vt + 1, r: e.newRequest("c", seqPrompt(1, L), 1, "")}
	runVirtual(t, e, []*vclient{c}, nil)
	if c.r.localHit != 0 || c.r.extHit != (L-1)/16*16 {
		t.Errorf("cpu hit: local %d ext %d", c.r.localHit, c.r.extHit)
	}
	within(t, "engine cpu hit 32k", ttft(c), e.cost.estimateTTFT(tierCPU, L, 16, 8192, 0), 0.01)
}

// tokensDuring counts the tokens of c in [from, to].
func tokensDuring(c *vclient, from, to float64) int {
	n := 0
	for _, at := range c.tokens {
		if at >= from && at <= to {
			n++
		}
	}
	return n
}

// gaps returns the inter-token gaps of c whose later token falls in [from, to].
func gaps(c *vclient, from, to float64) []float64 {
	var g []float64
	for i := 1; i < len(c.tokens); i++ {
		if c.tokens[i] >= from && c.tokens[i] <= to {
			g = append(g, c.tokens[i]-c.tokens[i-1])
		}
	}
	return g
}

// MB1 in modeled time: D decodes, then at 1 s one prefill of P tokens.
func mb1(t *testing.T, d, p int) (base, prefillTTFT, perStream float64, decodes []*vclient, pre *vclient) {
	t.Helper()
	e := testEngine(t, 16384, 0)
	var clients []*vclient
	for i := range d {
		c := &vclient{sent: 0, r: e.newRequest("d"+itoa(i), seqPrompt(100+i, 64), 1<<20, "")}
		decodes = append(decodes, c)
		clients = append(clients, c)
	}
	const inject = 1.0
	pre = &vclient{sent: inject, r: e.newRequest("p", seqPrompt(7, p), 1, "")}
	clients = append(clients, pre)
	runVirtual(t, e, clients, func() bool { return pre.done && e.vt > inject+0.5+pre.tokens[0]-inject })
	prefillTTFT = ttft(pre)
	var all []float64
	total := 0
	for _, c := range decodes {
		all = append(all, gaps(c, 0.5, inject)...)
		total += tokensDuring(c, inject, inject+prefillTTFT)
	}
	sort.Float64s(all)
	return all[len(all)/2], prefillTTFT, float64(total) / float64(d), decodes, pre
}

// gapsAcross returns the inter-token gaps of c that overlap [from, to].
func gapsAcross(c *vclient, from, to float64) []float64 {
	var g []float64
	for i := 1; i < len(c.tokens); i++ {
		if c.tokens[i] > from && c.tokens[i-1] < to {
			g = append(g, c.tokens[i]-c.tokens[i-1])
		}
	}
	return g
}

// TestEngineMB1DecodeStall checks the scheduling rule: decodes wait while
// prompt chunks are computed and get the decode steps the prefill steps
// earned, more per chunk the more decodes there are.
func TestEngineMB1DecodeStall(t *testing.T) {
	base, pttft, _, decodes, _ := mb1(t, 1, 32768)
	worst := slices.Max(gapsAcross(decodes[0], 1.0, 1.0+pttft))
	if worst < 0.8*pttft {
		t.Errorf("D=1 P=32k: largest gap across the prefill %.3g s of a prefill TTFT %.3g s: the decode was not held back", worst, pttft)
	}
	t.Logf("D=1 P=32k: base gap %.3g s, largest gap across the prefill %.3g s", base, worst)

	c := h20Cost(t)
	var per []float64
	for _, d := range []int{1, 4, 8} {
		_, pttft, perStream, _, _ := mb1(t, d, 131072)
		// Front end: APIBase + APIPerRunning·D at the base TPOT; then the
		// decode steps earned by 15 of the 16 chunks (the last ends the
		// window).
		step := c.stepTime(stepShape{Decodes: d})
		want := (h20.APIBase+h20.APIPerRunning*float64(d))/step + math.Floor(15*c.decodeCredit(d))
		if math.Abs(perStream-want) > 2 {
			t.Errorf("D=%d P=128k: %.1f tokens per stream during the prefill, want %.1f ± 2 (front end + earned decode steps)", d, perStream, want)
		}
		t.Logf("D=%d P=128k: prefill TTFT %.3g s, %.1f tokens per stream during", d, pttft, perStream)
		per = append(per, perStream)
	}
	if !(per[0] < per[1] && per[1] < per[2]) {
		t.Errorf("tokens per stream during at D=1,4,8: %v, want increasing", per)
	}
}

func TestEnginePreemptsWhenPoolIsShort(t *testing.T) {
	// 40 blocks of 16: two requests of 256-token prompts (16 blocks) that
	// each grow to 512 tokens cannot both finish without preemption.
	e := testEngine(t, 40, 0)
	a := &vclient{sent: 0, r: e.newRequest("a", seqPrompt(1, 256), 256, "")}
	b := &vclient{sent: 0, r: e.newRequest("b", seqPrompt(2, 256), 256, "")}
	runVirtual(t, e, []*vclient{a, b}, nil)
	if !a.done || !b.done || len(a.tokens) != 256 || len(b.tokens) != 256 {
		t.Fatalf("a done %v (%d tokens), b done %v (%d tokens)", a.done, len(a.tokens), b.done, len(b.tokens))
	}
	if a.r.preempted+b.r.preempted == 0 {
		t.Errorf("no preemption with a pool too small for both")
	}
	if e.gpu.used() != 0 {
		t.Errorf("%d blocks still referenced after both finished", e.gpu.used())
	}
}

// As vLLM V1's scheduler, a waiting request is admitted when the blocks
// of the chunk it is scheduled for fit, not only when its whole prompt
// does: a 12,000-token prompt (750 blocks) starts in a pool with 600 free
// blocks, its first chunk (8192 tokens, 512 blocks) allocated.
func TestEngineAdmitsOnTheScheduledChunk(t *testing.T) {
	e := testEngine(t, 700, 0)
	other := e.gpu.alloc(100) // another request's blocks
	r := e.newRequest("a", seqPrompt(1, 12000), 1, "")
	e.submit(r, 0)
	p := e.schedule()
	if len(p.items) != 1 || p.items[0].r != r || p.items[0].tokens != 8192 {
		t.Fatalf("first step %+v: want the first 8192-token chunk of the request", p.items)
	}
	if len(r.blocks) != 512 || e.gpu.used() != 612 {
		t.Errorf("request holds %d blocks, pool %d in use: want 512 and 612", len(r.blocks), e.gpu.used())
	}
	e.gpu.release(other)
}

// A preempted request's lookups when it is admitted again are not
// counted in vllm:prefix_cache_queries and hits (vLLM counts them apart
// and does not export them): the queries are the two prompts, once.
func TestEnginePreemptedLookupsNotCounted(t *testing.T) {
	e := testEngine(t, 40, 0)
	a := &vclient{sent: 0, r: e.newRequest("a", seqPrompt(1, 256), 256, "")}
	b := &vclient{sent: 0, r: e.newRequest("b", seqPrompt(2, 256), 256, "")}
	runVirtual(t, e, []*vclient{a, b}, nil)
	if a.r.preempted+b.r.preempted == 0 {
		t.Fatal("no preemption: the test needs one")
	}
	if e.m.prefixQueries != 512 || e.m.prefixHits != 0 {
		t.Errorf("prefix cache queries %.0f, hits %.0f: want 512 and 0", e.m.prefixQueries, e.m.prefixHits)
	}
}

// A request that waits at the head of the queue because the pool cannot
// hold it is looked up at every step, and vLLM 0.18.1 (h20) counted
// every lookup in vllm:prefix_cache_queries and hits; later versions
// count it once, when it is admitted. b shares its first 128 tokens with
// a, which holds 35 of the 40 blocks while it runs: b waits for all of
// a's steps, its hit found at each lookup.
func TestEngineCountsEveryAttempt(t *testing.T) {
	once := h20
	once.CountEveryAttempt = false
	for _, tc := range []struct {
		name  string
		p     Profile
		every bool
	}{{"vLLM 0.18.1 (h20)", h20, true}, {"once per request", once, false}} {
		e := testEngineOf(t, 40, 0, tc.p)
		pa := seqPrompt(1, 560)
		a := &vclient{sent: 0, r: e.newRequest("a", pa, 32, "")}
		b := &vclient{sent: 0.001, r: e.newRequest("b", append(slices.Clone(pa[:128]), seqPrompt(2, 128)...), 1, "")}
		runVirtual(t, e, []*vclient{a, b}, nil)
		if !a.done || !b.done || b.tokens[0] < a.tokens[len(a.tokens)-1] {
			t.Fatalf("%s: a done %v, b done %v: b must wait for a", tc.name, a.done, b.done)
		}
		lookups := (e.m.prefixQueries - 560) / 256
		if e.m.prefixHits != 128*lookups || (lookups > 30) != tc.every || (lookups == 1) == tc.every {
			t.Errorf("%s: queries %.0f, hits %.0f: b looked up %.1f times, hits 128 each; want more than 30 (a's 32 steps): %t", tc.name, e.m.prefixQueries, e.m.prefixHits, lookups, tc.every)
		}
	}
}

// A request the pool cannot hold leaves it as it was, as vLLM's
// allocate_slots checks the free blocks before it touches the hits: its
// cached hit, the least recently released block, is still the first
// evicted.
func TestEngineFailedAdmissionTouchesNothing(t *testing.T) {
	e := testEngine(t, 6, 0)
	p, ids, evicted := committedPool(6)
	e.gpu = p
	p.release(ids[1:2]) // hash 2, least recent
	p.release(ids[0:1])
	r := e.newRequest("r", seqPrompt(1, 64), 1, "")
	r.hashes[0] = 2 // hits hash 2, needs 3 more blocks: 1 evictable
	if e.admit(r, 8192) || p.used() != 4 {
		t.Fatalf("admitted into a pool of 2 evictable blocks, or left %d in use (want 4)", p.used())
	}
	if p.alloc(1); !slices.Equal(*evicted, []blockHash{2}) {
		t.Errorf("evicted %v after the failed admission: want hash 2, still least recent", *evicted)
	}
}

func TestCacheSaltSeparates(t *testing.T) {
	e := testEngine(t, 1024, 0)
	p := seqPrompt(1, 1000)
	a := &vclient{r: e.newRequest("a", p, 1, "alice")}
	runVirtual(t, e, []*vclient{a}, nil)
	b := &vclient{sent: e.vt, r: e.newRequest("b", p, 1, "bob")}
	runVirtual(t, e, []*vclient{b}, nil)
	c := &vclient{sent: e.vt, r: e.newRequest("c", p, 1, "alice")}
	runVirtual(t, e, []*vclient{c}, nil)
	if b.r.localHit != 0 {
		t.Errorf("another salt hit %d tokens", b.r.localHit)
	}
	if c.r.localHit != 992 {
		t.Errorf("same salt hit %d tokens, want 992", c.r.localHit)
	}
}

// committedPool returns a GPU pool of n blocks, all allocated and
// committed with hashes 1 to n, their ids, and the hashes it evicts, in
// order.
func committedPool(n int) (*gpuPool, []int, *[]blockHash) {
	p := newGPUPool(n)
	evicted := new([]blockHash)
	p.onEvict = func(h blockHash) { *evicted = append(*evicted, h) }
	ids := p.alloc(n)
	for i, id := range ids {
		p.commit(id, blockHash(i+1))
	}
	return p, ids, evicted
}

func TestGPUPoolLRU(t *testing.T) {
	p, ids, evicted := committedPool(3)
	p.release(ids[1:2]) // hash 2 released first: least recent
	p.release(ids[0:1])
	if p.alloc(3) != nil {
		t.Fatal("allocated past the free and evictable blocks")
	}
	got := p.alloc(1)
	if len(got) != 1 || got[0] != ids[1] || !slices.Equal(*evicted, []blockHash{2}) {
		t.Errorf("evicted %v (slot %v), want hash 2 in slot %d", *evicted, got, ids[1])
	}
	if n := len(p.lookup([]blockHash{1, 2}, 2)); n != 1 {
		t.Errorf("lookup found %d blocks, want 1 (hash 2 was evicted)", n)
	}
}

// TestGPUPoolFreesTailFirst checks vLLM's free order: the blocks of a
// finished request become evictable tail first, so eviction takes its
// last block before its first and a later request still hits the head.
func TestGPUPoolFreesTailFirst(t *testing.T) {
	p, ids, evicted := committedPool(4)
	p.release(ids) // one request's blocks, in sequence order
	p.alloc(2)
	if !slices.Equal(*evicted, []blockHash{4, 3}) {
		t.Errorf("evicted %v, want the tail first: [4 3]", *evicted)
	}
	if n := len(p.lookup([]blockHash{1, 2, 3}, 3)); n != 2 {
		t.Errorf("lookup found %d leading blocks, want 2 (the head survives)", n)
	}
}
