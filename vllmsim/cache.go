package vllmsim

import (
	"container/list"
	"encoding/binary"
	"hash/fnv"
	"slices"
)

// A blockHash names the content of one full KV block: its tokens, the
// hash of the block before it and, for the first block, the cache salt.
// It is the same in every process (FNV-1a, no per-process seed), so a
// consumer can check what a producer holds.
type blockHash uint64

// chainHash returns the hash of a block of tokens after parent.
func chainHash(parent blockHash, salt string, tokens []int) blockHash {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(parent))
	h.Write(b[:])
	if salt != "" {
		h.Write([]byte(salt))
		h.Write([]byte{0})
	}
	for _, t := range tokens {
		binary.LittleEndian.PutUint32(b[:4], uint32(t))
		h.Write(b[:4])
	}
	return blockHash(h.Sum64())
}

// blockHashes returns the hashes of the full blocks of tokens; the salt is
// mixed into the first block only, so it separates whole chains.
func blockHashes(tokens []int, size int, salt string) []blockHash {
	n := len(tokens) / size
	hs := make([]blockHash, n)
	var parent blockHash
	for i := range n {
		s := ""
		if i == 0 {
			s = salt
		}
		parent = chainHash(parent, s, tokens[i*size:(i+1)*size])
		hs[i] = parent
	}
	return hs
}

// A gpuBlock is one slot of the GPU pool.
type gpuBlock struct {
	hash   blockHash
	cached bool // hash is valid and the block is in gpuPool.cached
	ref    int  // running requests (or held P/D transfers) using it
	lru    *list.Element
}

// A gpuPool is the engine's paged KV pool with vLLM's prefix caching:
// full blocks are cached by hash; a block nobody references stays cached
// until it is evicted, least recently released first, when a new block is
// needed. Blocks in use are never evicted.
type gpuPool struct {
	blocks  []gpuBlock
	free    []int // uncached, unreferenced slots
	cached  map[blockHash]int
	lru     *list.List // unreferenced cached slots, front = least recent
	onEvict func(blockHash)
}

func newGPUPool(n int) *gpuPool {
	p := &gpuPool{blocks: make([]gpuBlock, n), cached: map[blockHash]int{}, lru: list.New()}
	p.free = make([]int, n)
	for i := range n {
		p.free[i] = n - 1 - i
	}
	return p
}

// available is how many blocks an allocation can get now.
func (p *gpuPool) available() int { return len(p.free) + p.lru.Len() }

// used is how many blocks are referenced.
func (p *gpuPool) used() int { return len(p.blocks) - p.available() }

// lookup returns the slots of the longest run of hashes, from the first,
// that the pool holds, at most max of them. It takes a reference on each.
func (p *gpuPool) lookup(hs []blockHash, max int) []int {
	var ids []int
	for i, h := range hs {
		if i >= max {
			break
		}
		id, ok := p.cached[h]
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		p.ref(id)
	}
	return ids
}

// peek returns how many leading hashes the pool holds, at most max, and
// how many of those slots nobody references (an allocation could evict
// them), taking no reference: a lookup that may not allocate.
func (p *gpuPool) peek(hs []blockHash, max int) (n, idle int) {
	for _, h := range hs[:min(max, len(hs))] {
		id, ok := p.cached[h]
		if !ok {
			break
		}
		n++
		if p.blocks[id].ref == 0 {
			idle++
		}
	}
	return n, idle
}

// contains reports how many leading hashes the pool holds, without
// taking references.
func (p *gpuPool) contains(hs []blockHash) int {
	for i, h := range hs {
		if _, ok := p.cached[h]; !ok {
			return i
		}
	}
	return len(hs)
}

func (p *gpuPool) ref(id int) {
	b := &p.blocks[id]
	if b.ref == 0 && b.lru != nil {
		p.lru.Remove(b.lru)
		b.lru = nil
	}
	b.ref++
}

// alloc returns n fresh referenced slots, evicting cached blocks if it
// must, or nil when the pool cannot supply them.
func (p *gpuPool) alloc(n int) []int {
	if n > p.available() {
		return nil
	}
	ids := make([]int, 0, n)
	for range n {
		var id int
		if k := len(p.free); k > 0 {
			id = p.free[k-1]
			p.free = p.free[:k-1]
		} else {
			e := p.lru.Front()
			id = e.Value.(int)
			p.lru.Remove(e)
			b := &p.blocks[id]
			b.lru = nil
			delete(p.cached, b.hash)
			b.cached = false
			if p.onEvict != nil {
				p.onEvict(b.hash)
			}
		}
		p.blocks[id].ref = 1
		ids = append(ids, id)
	}
	return ids
}

// commit records that slot id now holds the full block h. A block whose
// content another slot already caches stays uncached.
func (p *gpuPool) commit(id int, h blockHash) {
	b := &p.blocks[id]
	if b.cached {
		return
	}
	if _, dup := p.cached[h]; dup {
		return
	}
	b.hash, b.cached = h, true
	p.cached[h] = id
}

// release drops one reference on each slot of a request's blocks (in
// sequence order); unreferenced cached slots become evictable, the others
// free. As vLLM's KV cache manager, it frees them tail first, so that a
// request's last blocks are evicted before its first ones: block 0,
// shared by every longer prefix, ends most recent.
func (p *gpuPool) release(ids []int) {
	for _, id := range slices.Backward(ids) {
		b := &p.blocks[id]
		b.ref--
		if b.ref > 0 {
			continue
		}
		b.ref = 0
		if b.cached {
			b.lru = p.lru.PushBack(id)
		} else {
			p.free = append(p.free, id)
		}
	}
}

// A cpuPool is the CPU offload store: a set of block hashes of bounded
// size, least recently used evicted first. It holds no data; it models
// which blocks a load from host memory would find. A block is stored over
// the device-to-host direction of PCIe, one block after the other: it can
// be found only once its copy has completed. Loads go the other way
// (host to device) and do not wait for stores: PCIe is full duplex.
type cpuPool struct {
	cap   int
	lru   *list.List // front = least recent; values are *cpuBlock
	index map[blockHash]*list.Element
	// busy is when the device-to-host copies queued so far complete.
	busy float64
}

// A cpuBlock is one block of the CPU store: its hash and when its copy
// from the GPU completes.
type cpuBlock struct {
	hash  blockHash
	ready float64
}

func newCPUPool(n int) *cpuPool {
	return &cpuPool{cap: n, lru: list.New(), index: map[blockHash]*list.Element{}}
}

// store queues the copy of h, taking copy seconds of the device-to-host
// direction from now or when the copies before it end (or refreshes h).
func (c *cpuPool) store(h blockHash, now, copy float64) {
	if c.cap <= 0 {
		return
	}
	if e, ok := c.index[h]; ok {
		c.lru.MoveToBack(e)
		return
	}
	if c.lru.Len() >= c.cap {
		e := c.lru.Front()
		delete(c.index, e.Value.(*cpuBlock).hash)
		c.lru.Remove(e)
	}
	c.busy = max(c.busy, now) + copy
	c.index[h] = c.lru.PushBack(&cpuBlock{hash: h, ready: c.busy})
}

// match returns how many leading hashes the store holds with their copy
// complete at now, refreshing them.
func (c *cpuPool) match(hs []blockHash, now float64) int {
	for i, h := range hs {
		e, ok := c.index[h]
		if !ok || e.Value.(*cpuBlock).ready > now {
			return i
		}
		c.lru.MoveToBack(e)
	}
	return len(hs)
}
