package vllmsim

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// An engine is the simulated vLLM V1 engine core: a waiting queue, a
// running batch, the GPU block pool with prefix caching, an optional CPU
// offload store, and a continuous-batching scheduler with chunked prefill.
// It keeps modeled time (vt, seconds) and knows nothing of wall clocks or
// HTTP: schedule plans a step and says how long it takes, finish applies
// it. The server's loop sleeps in between; tests step it in virtual time.
// Every method must be called with mu held.
type engine struct {
	mu sync.Mutex

	block      int // tokens per block
	budget     int // max_num_batched_tokens
	vocabWords int // generated tokens are ids below this
	seed       uint64
	cost       costModel

	gpu       *gpuPool
	cpu       *cpuPool // nil without CPU offload
	connector bool     // a KV connector is configured: external stats count

	waiting []*request
	loading []*request // waiting for an external (CPU or remote) load
	running []*request
	held    map[string]*heldKV // producer: KV kept for a consumer
	credit  float64            // decode steps earned by prefill steps (see schedule)

	vt float64 // modeled seconds since start
	m  counters
	// wake is signalled (non-blocking) when work arrives.
	wake chan struct{}
}

// counters are the engine's Prometheus counters and TTFT histogram.
type counters struct {
	prefixQueries, prefixHits float64
	extQueries, extHits       float64
	promptTokens, genTokens   float64
	// vllm:prompt_tokens_by_source, counted at a request's first token.
	srcCompute, srcLocal, srcExternal float64
	promptCached                      float64
	// vllm:prompt_tokens_cached_by_source: device, host, p2p.
	cachedDevice, cachedHost, cachedP2P float64
	ttft                                histogram
}

// A finish reason of a request.
const (
	finishLength = "length"
	finishStop   = "stop"
)

type reqState int

const (
	stWaiting reqState = iota
	stLoading
	stRunning
	stDone
)

// A request is one generation the engine serves.
type request struct {
	id        string
	salt      string
	promptLen int
	maxTokens int
	seq       []int       // prompt, then the generated tokens
	hashes    []blockHash // of the full blocks of seq
	arrival   float64     // modeled time it reached the engine
	apiTime   float64     // modeled front-end time before it did
	rng       *rand.Rand

	state      reqState
	blocks     []int // GPU slots, in sequence order
	computed   int   // tokens of seq whose KV is in blocks
	committed  int   // leading blocks already cached by hash
	nOut       int
	readyAt    float64 // loading: when the load completes
	loadFrom   int     // loading: first block loaded (the local hit ends there)
	admitted   bool    // its engine admission cost was charged
	firstAt    float64 // modeled time of the first token, -1 before
	cached     int     // prompt tokens not computed: local + external hits
	firstLocal int     // local hit of the first admission
	firstExt   int     // external hit of the first admission
	localHit   int
	extHit     int
	remote     *remoteKV // consumer: the peer holds this many leading blocks
	wantRemote bool      // consumer: the request asked for a remote prefill
	holdPeer   bool      // producer: keep the KV for a consumer when done
	preempted  int

	out *stream
}

// remoteKV is what a consumer verified its producer holds.
type remoteKV struct {
	blocks int // leading full prompt blocks the peer holds
}

// heldKV is KV a producer keeps for its consumer.
type heldKV struct {
	blocks  []int
	hashes  []blockHash
	expires time.Time
}

// An event is what the engine tells a request's reader.
type event struct {
	token  int
	at     float64 // modeled time
	finish string  // "" while running
	// Set on the finishing event.
	promptTokens     int
	completionTokens int
	cachedTokens     int
	blockIDs         []int // producer: the held blocks
}

// A stream carries a request's events from the engine to its handler. It
// never blocks the engine.
type stream struct {
	mu     sync.Mutex
	evs    []event
	notify chan struct{}
}

func newStream() *stream { return &stream{notify: make(chan struct{}, 1)} }

func (s *stream) push(ev event) {
	s.mu.Lock()
	s.evs = append(s.evs, ev)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// take returns the events pushed since the last take.
func (s *stream) take() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.evs
	s.evs = nil
	return evs
}

type engineConfig struct {
	blockSize, gpuBlocks, cpuBlocks, budget int
	vocabWords                              int
	seed                                    int64
	connector                               bool
	cost                                    costModel
}

func newEngine(c engineConfig) *engine {
	e := &engine{
		block:      c.blockSize,
		budget:     c.budget,
		vocabWords: c.vocabWords,
		seed:       uint64(c.seed),
		cost:       c.cost,
		gpu:        newGPUPool(c.gpuBlocks),
		connector:  c.connector || c.cpuBlocks > 0,
		held:       map[string]*heldKV{},
		wake:       make(chan struct{}, 1),
	}
	e.m.ttft = newHistogram(ttftBuckets)
	if c.cpuBlocks > 0 {
		e.cpu = newCPUPool(c.cpuBlocks)
	}
	return e
}

// newRequest makes a request for prompt; the engine's seed and the prompt
// fix the tokens it generates.
func (e *engine) newRequest(id string, prompt []int, maxTokens int, salt string) *request {
	h := uint64(chainHash(0, salt, prompt))
	r := &request{
		id: id, salt: salt, promptLen: len(prompt), maxTokens: maxTokens,
		seq:     slices.Clip(slices.Clone(prompt)),
		rng:     rand.New(rand.NewPCG(e.seed, h)),
		firstAt: -1,
		out:     newStream(),
	}
	r.hashes = blockHashes(r.seq, e.block, salt)
	return r
}

// submit queues r, arrived at modeled time at. Requests that reach the
// engine at the same modeled time queue in the order of their ids, not in
// the order their handlers happened to run: the same load gives the same
// schedule, and the same cache hits, from run to run.
func (e *engine) submit(r *request, at float64) {
	r.arrival = at
	r.state = stWaiting
	i := len(e.waiting)
	for i > 0 && e.waiting[i-1].preempted == 0 && e.waiting[i-1].arrival == r.arrival && idLess(r.id, e.waiting[i-1].id) {
		i--
	}
	e.waiting = slices.Insert(e.waiting, i, r)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// idLess orders request ids as numbers where they differ only in a
// trailing number ("x-9" before "x-10"), else as strings.
func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// abort drops r wherever it is and frees its blocks.
func (e *engine) abort(r *request) {
	if r.state == stDone {
		return
	}
	e.waiting = slices.DeleteFunc(e.waiting, func(x *request) bool { return x == r })
	e.loading = slices.DeleteFunc(e.loading, func(x *request) bool { return x == r })
	e.running = slices.DeleteFunc(e.running, func(x *request) bool { return x == r })
	e.gpu.release(r.blocks)
	r.blocks = nil
	r.state = stDone
}

// An item is one request's share of a step.
type item struct {
	r      *request
	tokens int
}

// A plan is one engine step: what it computes and how long it takes.
type plan struct {
	items []item
	shape stepShape
	dur   float64
}

// busy reports whether anything is queued, loading or running.
func (e *engine) busy() bool {
	return len(e.waiting)+len(e.loading)+len(e.running) > 0
}

// nextLoad returns when the earliest pending load completes.
func (e *engine) nextLoad() (float64, bool) {
	if len(e.loading) == 0 {
		return 0, false
	}
	t := e.loading[0].readyAt
	for _, r := range e.loading[1:] {
		t = min(t, r.readyAt)
	}
	return t, true
}

// schedule plans the next step at the current modeled time. Finished
// loads join the batch first. A step is either a prefill step or a decode
// step:
//
//   - a prefill step computes prompt chunks within the token budget:
//     first those of running requests still prefilling, in order, then
//     waiting requests, in order, while the budget and the pool allow;
//     requests that are decoding wait;
//   - a decode step advances every decoding request by one token.
//
// While prompt work is pending, each prefill step earns the decoding
// requests the cost model's decode credit (Profile.InterleaveBase,
// InterleaveMax and InterleaveHalf), and a decode step runs whenever a
// whole credit has accumulated: so decodes get a few tokens per chunk of
// a long prefill, as the H20 reference (docs/reference.md) measured. A
// prefill step itself costs more the longer the context its chunk
// attends to (costModel.stepTime), so the later chunks of a long prompt
// hold the decodes longest.
// A plan with no items means there is nothing to compute now (idle, or
// only loads in flight).
//
// Note: vLLM's V1 scheduler puts every running decode into every step,
// beside the prefill chunk (the decodes taking D tokens of the budget),
// which would give each decode one token per chunk at every D. The
// reference contradicts that on both sides: at D = 1, 5.7 tokens during
// the 16 chunks of a 128k prefill, four of them before it started; at D =
// 4 and 8, 37 and 40, about 2.3 per chunk, the same at both. Batching
// the decodes with the chunks would give about 4 + P/8192 tokens per
// stream, off by more than 25 % in the 9 cells of P ≥ 32k; the
// interleave credit, earned per prefill step and saturating in D, is
// fitted to the reference rather than derived.
func (e *engine) schedule() *plan {
	e.finishLoads()
	decoding, pending := e.census()
	if !pending {
		e.credit = 0
	}
	p := &plan{}
	if pending && (e.credit < 1 || decoding == 0) {
		e.planPrefill(p)
		if len(p.items) > 0 {
			e.credit += e.cost.decodeCredit(decoding)
			p.dur = e.cost.stepTime(p.shape)
			return p
		}
	}
	e.planDecodes(p)
	if len(p.items) > 0 && e.credit >= 1 {
		e.credit--
	}
	e.attemptHead(e.budget - p.shape.Decodes)
	p.dur = e.cost.stepTime(p.shape)
	return p
}

// decodingNow reports whether r's next step is one decode token.
func decodingNow(r *request) bool { return r.nOut > 0 && len(r.seq)-r.computed == 1 }

// census counts the running requests that are decoding and reports
// whether any prompt work is pending (running or waiting).
func (e *engine) census() (decoding int, pending bool) {
	pending = len(e.waiting) > 0
	for _, r := range e.running {
		if decodingNow(r) {
			decoding++
		} else {
			pending = true
		}
	}
	return decoding, pending
}

// planPrefill fills a prefill step: chunks of the running requests still
// prefilling, then admissions, within the token budget.
func (e *engine) planPrefill(p *plan) {
	budget := e.budget
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		r := e.running[i]
		if decodingNow(r) {
			continue
		}
		k := min(len(r.seq)-r.computed, budget)
		if !e.grow(r, r.computed+k, &preempted) {
			i-- // r itself was preempted to make room
			continue
		}
		e.plan(p, r, k)
		budget -= k
	}
	// As vLLM, no new admissions in a step that had to preempt.
	for len(e.waiting) > 0 && budget > 0 && !preempted {
		r := e.waiting[0]
		if !e.admit(r, budget) {
			break
		}
		e.waiting = e.waiting[1:]
		if r.state == stLoading {
			e.loading = append(e.loading, r)
			continue
		}
		r.state = stRunning
		e.running = append(e.running, r)
		k := min(len(r.seq)-r.computed, budget)
		e.plan(p, r, k)
		budget -= k
	}
}

// planDecodes fills a decode step: one token for every decoding request,
// preempting (recompute) when the pool is short.
func (e *engine) planDecodes(p *plan) {
	preempted := false
	for i := 0; i < len(e.running); i++ {
		r := e.running[i]
		if !decodingNow(r) {
			continue
		}
		if !e.grow(r, r.computed+1, &preempted) {
			i--
			continue
		}
		e.plan(p, r, 1)
	}
}

// plan adds k tokens of r to the step.
func (e *engine) plan(p *plan, r *request, k int) {
	p.items = append(p.items, item{r, k})
	if decodingNow(r) {
		p.shape.Decodes++
		p.shape.DecodeContext += int64(r.computed)
	} else {
		p.shape.Chunks = append(p.shape.Chunks, chunk{Tokens: k, Context: r.computed})
	}
	if !r.admitted {
		r.admitted = true
		p.shape.Admitted = append(p.shape.Admitted, r.promptLen)
	}
}

// grow makes r's blocks cover tokens, preempting the most recently
// admitted running requests (recompute, as vLLM V1 does) while the pool
// is short. It reports false when r itself had to be preempted.
func (e *engine) grow(r *request, tokens int, preempted *bool) bool {
	need := (tokens+e.block-1)/e.block - len(r.blocks)
	for need > 0 {
		if ids := e.gpu.alloc(need); ids != nil {
			r.blocks = append(r.blocks, ids...)
			return true
		}
		victim := e.running[len(e.running)-1]
		e.preempt(victim)
		*preempted = true
		if victim == r {
			return false
		}
	}
	return true
}

func (e *engine) preempt(r *request) {
	e.running = slices.DeleteFunc(e.running, func(x *request) bool { return x == r })
	e.gpu.release(r.blocks)
	r.blocks, r.computed, r.committed, r.state = nil, 0, 0, stWaiting
	r.preempted++

	e.waiting = slices.Insert(e.waiting, 0, r)
}

// admit looks r's prefix up in the GPU pool and, past that, in the CPU
// store or at its P/D producer, counts the queries and hits as vLLM does
// (in tokens), and allocates the blocks of what it is scheduled for: its
// hits and the next budget tokens, as vLLM V1's allocate_slots, not its
// whole prompt (the later chunks grow it, preempting when the pool is
// short). The last prompt token is always computed, so hits stop at the
// last full block before it. A request with an external hit goes to
// loading. admit reports false, leaving r waiting and the pool as it was
// (its hits not touched, as allocate_slots checks the free blocks first),
// when the pool cannot hold that now; a profile that counts every
// attempt (Profile.CountEveryAttempt) counts that lookup too.
func (e *engine) admit(r *request, budget int) bool {
	total := len(r.seq)
	maxHit := (total - 1) / e.block
	l := e.look(r, budget)
	if !l.fits {
		e.countAttempt(r, l)
		return false
	}
	n, ext, need := l.local, l.ext, l.need
	r.blocks = append(e.gpu.lookup(r.hashes, maxHit), e.gpu.alloc(need)...)
	r.localHit = n * e.block
	r.extHit = ext * e.block
	r.computed = r.localHit
	r.committed = n
	if r.preempted == 0 {
		r.cached = r.localHit + r.extHit
		r.firstLocal, r.firstExt = r.localHit, r.extHit
		e.countLookup(total, r.localHit, r.extHit, l.conn)
	}
	if ext > 0 {
		r.state = stLoading
		r.loadFrom = n
		if r.remote != nil {
			r.readyAt = e.vt + e.cost.remoteLoadTime(r.extHit)
		} else {
			r.readyAt = e.vt + e.cost.hostLoadTime(r.extHit)
		}
	}
	return true
}

// A lookup is what admitting a request would find and need now.
type lookup struct {
	local, ext int  // blocks hit on the GPU and from a connector
	need       int  // fresh GPU blocks its hits and the budget's tokens take
	conn       bool // a connector counts the lookup
	fits       bool // the pool can supply them now
}

// look looks r's prefix up, as admit with budget tokens would, taking no
// block and touching none.
func (e *engine) look(r *request, budget int) lookup {
	total := len(r.seq)
	maxHit := (total - 1) / e.block
	n, idle := e.gpu.peek(r.hashes, maxHit)
	ext, conn := e.externalHit(r, n, maxHit)
	cover := min(total, (n+ext)*e.block+budget)
	need := (cover+e.block-1)/e.block - n
	return lookup{local: n, ext: ext, need: need, conn: conn, fits: need <= e.gpu.available()-idle}
}

// countAttempt counts the lookup l of r, which stays waiting, where the
// simulated version counts every attempt (Profile.CountEveryAttempt).
func (e *engine) countAttempt(r *request, l lookup) {
	if e.cost.p.CountEveryAttempt && r.preempted == 0 {
		e.countLookup(len(r.seq), l.local*e.block, l.ext*e.block, l.conn)
	}
}

// attemptHead is vLLM's scheduler reaching its waiting queue, with budget
// tokens left, in a step the simulator spends on decodes only (see
// schedule): it looks the head up, and the lookup counts where the head
// would not fit (one that would is admitted by vLLM in that step and
// counted once, by the simulator at its next prefill step).
func (e *engine) attemptHead(budget int) {
	if len(e.waiting) == 0 || budget <= 0 {
		return
	}
	r := e.waiting[0]
	if l := e.look(r, budget); !l.fits {
		e.countAttempt(r, l)
	}
}

// externalHit returns how many blocks past r's n local hits (of at most
// maxHit) a KV connector would load: from its P/D producer or the CPU
// store; and whether a connector counts the lookup at all.
func (e *engine) externalHit(r *request, n, maxHit int) (ext int, conn bool) {
	conn = e.connector || r.wantRemote
	if !conn {
		return 0, false
	}
	switch {
	case r.remote != nil:
		ext = max(0, min(r.remote.blocks, maxHit)-n)
	case e.cpu != nil:
		ext = e.cpu.match(r.hashes[n:min(maxHit, len(r.hashes))], e.vt)
	}
	return ext, true
}

// countLookup counts a prefix lookup of total tokens, local of them hits
// on the GPU and ext from a connector, in the prefix-cache counters. As
// vLLM (PrefixCacheStats), the lookups of a preempted request admitted
// again are not counted (callers check): a victim finding its own blocks
// would raise the hit rate, one whose blocks were evicted would lower
// it, and neither is reuse across requests.
func (e *engine) countLookup(total, local, ext int, conn bool) {
	e.m.prefixQueries += float64(total)
	e.m.prefixHits += float64(local)
	if conn {
		e.m.extQueries += float64(total - local)
		e.m.extHits += float64(ext)
	}
}

// finishLoads moves requests whose loads are complete into the batch,
// their loaded blocks now cached on the GPU.
func (e *engine) finishLoads() {
	var still []*request
	for _, r := range e.loading {
		if r.readyAt > e.vt {
			still = append(still, r)
			continue
		}
		n := r.extHit / e.block
		for i := r.loadFrom; i < r.loadFrom+n; i++ {
			e.gpu.commit(r.blocks[i], r.hashes[i])
		}
		r.computed = (r.loadFrom + n) * e.block
		r.state = stRunning
		e.running = append(e.running, r)
	}
	e.loading = still
}

// finish applies a step that ended at modeled time at: KV computed, full
// blocks cached (and written through to the CPU store), tokens sampled
// and sent, finished requests retired.
func (e *engine) finish(p *plan, at float64) {
	for _, it := range p.items {
		r := it.r
		if r.state != stRunning {
			continue // aborted or preempted meanwhile
		}
		r.computed += it.tokens
		e.commitFull(r)
		if r.computed < len(r.seq) {
			continue
		}
		tok := r.rng.IntN(max(e.vocabWords, 1))
		r.seq = append(r.seq, tok)
		r.nOut++
		e.m.genTokens++
		if n := len(r.seq) / e.block; n > len(r.hashes) {
			var parent blockHash
			if k := len(r.hashes); k > 0 {
				parent = r.hashes[k-1]
			}
			salt := ""
			if len(r.hashes) == 0 {
				salt = r.salt
			}
			r.hashes = append(r.hashes, chainHash(parent, salt, r.seq[(n-1)*e.block:n*e.block]))
		}
		ev := event{token: tok, at: at}
		if r.firstAt < 0 {
			r.firstAt = at
			e.countPrompt(r)
			e.m.ttft.observe(at - r.arrival + r.apiTime)
		}
		if r.nOut >= r.maxTokens {
			ev.finish = finishLength
			ev.promptTokens, ev.completionTokens, ev.cachedTokens = r.promptLen, r.nOut, r.cached
			e.running = slices.DeleteFunc(e.running, func(x *request) bool { return x == r })
			r.state = stDone
			if r.holdPeer {
				n := min(len(r.blocks), (r.promptLen+e.block-1)/e.block)
				ev.blockIDs = slices.Clone(r.blocks[:n])
				e.gpu.release(r.blocks[n:])
				e.held[r.id] = &heldKV{blocks: r.blocks[:n], hashes: r.hashes[:min(n, len(r.hashes))], expires: time.Now().Add(heldTimeout)}
			} else {
				e.gpu.release(r.blocks)
			}
			r.blocks = nil
		}
		r.out.push(ev)
	}
}

// countPrompt counts r's prompt tokens by source, as vLLM does when a
// request's prefill ends: computed, cached locally (device), loaded by a
// connector (host for CPU offload, p2p from a producer). When every token
// but the last was cached, the last is recomputed and counted twice, in
// local_compute and in local_cache_hit.
func (e *engine) countPrompt(r *request) {
	m := &e.m
	l := float64(r.promptLen)
	cached, ext := float64(r.cached), float64(r.firstExt)
	recomputed := 0.0
	if r.cached+1 == r.promptLen {
		recomputed = 1
	}
	m.promptTokens += l
	m.promptCached += cached
	m.srcCompute += l - cached
	m.srcLocal += cached + recomputed - ext
	m.srcExternal += ext
	m.cachedDevice += float64(r.firstLocal)
	if r.remote != nil {
		m.cachedP2P += ext
	} else {
		m.cachedHost += ext
	}
}

// heldTimeout is how long a producer keeps KV no consumer has read, as
// vLLM's NIXL connector's abort timeout (480 s by default).
const heldTimeout = 480 * time.Second

// commitFull caches r's newly completed full blocks on the GPU and in the
// CPU store.
func (e *engine) commitFull(r *request) {
	full := min(r.computed/e.block, len(r.hashes), len(r.blocks))
	for i := r.committed; i < full; i++ {
		e.gpu.commit(r.blocks[i], r.hashes[i])
		if e.cpu != nil {
			e.cpu.store(r.hashes[i], e.vt, e.cost.hostStoreTime(e.block))
		}
	}
	r.committed = max(r.committed, full)
}

// takeHeld hands the held KV of request id to a consumer: it checks the
// block ids (when given) against what the producer kept, frees the blocks
// and returns the hashes of their full blocks.
func (e *engine) takeHeld(id string, blockIDs []int) ([]blockHash, bool) {
	h, ok := e.held[id]
	if !ok {
		return nil, false
	}
	if blockIDs != nil && !slices.Equal(blockIDs, h.blocks) {
		return nil, false
	}
	delete(e.held, id)
	e.gpu.release(h.blocks)
	return h.hashes, true
}

// expireHeld frees held KV no consumer read in time.
func (e *engine) expireHeld(now time.Time) {
	for id, h := range e.held {
		if now.After(h.expires) {
			e.gpu.release(h.blocks)
			delete(e.held, id)
		}
	}
}

// usage is the fraction of GPU blocks in use, as vLLM's kv_cache_usage_perc.
func (e *engine) usage() float64 {
	if len(e.gpu.blocks) == 0 {
		return 0
	}
	return float64(e.gpu.used()) / float64(len(e.gpu.blocks))
}
