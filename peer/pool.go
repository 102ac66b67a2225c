package peer

import (
	"fmt"
	"syscall"

	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/tiers"
)

// Memory kinds of a server pool.
const (
	HostMem = "host"
	GPUMem  = "gpu"
)

// A Pool is the memory a server serves reads from, filled with the
// pattern of its seed: anonymous mmap'd host memory, or a device buffer of
// a backend.
type Pool struct {
	size int64
	seed uint64
	mem  string
	host []byte       // host pools
	buf  tiers.Buffer // device pools
	// backend owns buf; it may export it for GPUDirect (DMABufExporter).
	backend tiers.Backend
}

// NewHostPool maps size bytes of anonymous memory and fills them with the
// pattern of seed.
func NewHostPool(size int64, seed uint64) (*Pool, error) {
	if size <= 0 {
		return nil, fmt.Errorf("peer: pool size %d must be positive", size)
	}
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("peer: mmap pool of %d bytes: %w", size, err)
	}
	pattern.Fill(b, seed, 0)
	return &Pool{size: size, seed: seed, mem: HostMem, host: b}, nil
}

// NewBufferPool wraps a buffer of backend (GPU memory) as a pool and fills
// it with the pattern of seed through WriteAt. The pool owns buf.
func NewBufferPool(backend tiers.Backend, buf tiers.Buffer, seed uint64) (*Pool, error) {
	if h := buf.Host(); h != nil {
		pattern.Fill(h, seed, 0)
	} else {
		const step = 64 << 20
		tmp := make([]byte, min(step, buf.Size()))
		for off := int64(0); off < buf.Size(); off += step {
			n := min(step, buf.Size()-off)
			pattern.Fill(tmp[:n], seed, off)
			if _, err := buf.WriteAt(tmp[:n], off); err != nil {
				return nil, fmt.Errorf("peer: fill pool: %w", err)
			}
		}
	}
	mem := HostMem
	if buf.Kind() == tiers.Device {
		mem = GPUMem
	}
	return &Pool{size: buf.Size(), seed: seed, mem: mem, host: buf.Host(), buf: buf, backend: backend}, nil
}

// Size is the pool's length in bytes.
func (p *Pool) Size() int64 { return p.size }

// Seed is the pattern seed the pool is filled with.
func (p *Pool) Seed() uint64 { return p.seed }

// Mem is "host" or "gpu".
func (p *Pool) Mem() string { return p.mem }

// Host returns the pool's bytes when it is host memory, else nil.
func (p *Pool) Host() []byte { return p.host }

// Buffer returns the backend buffer of a device pool, else nil.
func (p *Pool) Buffer() tiers.Buffer { return p.buf }

// contains reports whether [off, off+n) lies in the pool.
func (p *Pool) contains(off, n int64) bool {
	return off >= 0 && n >= 0 && off <= p.size && n <= p.size-off
}

// Close releases the pool's memory.
func (p *Pool) Close() error {
	if p.buf != nil {
		return p.buf.Close()
	}
	if p.host != nil {
		err := syscall.Munmap(p.host)
		p.host = nil
		return err
	}
	return nil
}
