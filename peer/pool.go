package peer

import (
	"fmt"
	"io"
	"sync/atomic"
	"syscall"

	"github.com/kvtier/kvtier/pattern"
)

// Memory is a buffer a pool can live in: every tiers.Buffer is one.
// Host-resident memory returns its bytes from Host; device memory returns
// nil and is read and written through ReadAt and WriteAt.
type Memory interface {
	Size() int64
	// Addr is the device pointer or host virtual address of byte 0.
	Addr() uintptr
	Host() []byte
	io.ReaderAt
	io.WriterAt
	Close() error
}

// A DeviceMem is device memory an RDMA endpoint may read into or serve
// from (GPUDirect): its address and size and, where the backend can,
// a function exporting it as a DMA-BUF (fd and offset of Addr in it).
type DeviceMem struct {
	Addr   uintptr
	Size   int64
	Export func() (fd int, offset int64, err error)
}

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
	host []byte // host pools
	buf  Memory // device pools
	// export exports buf as a DMA-BUF for GPUDirect, nil if it cannot.
	export func() (int, int64, error)
	// flush makes the RDMA writes a NIC has made into buf visible to the
	// device's own reads (cuFlushGPUDirectRDMAWrites); nil: nothing to do.
	flush func() error
	// remoteWrites is set once a session registered the pool for
	// remote write: RDMA WRITEs may have landed in it since.
	remoteWrites atomic.Bool
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

// NewBufferPool wraps a backend buffer as a pool of the given kind ("host"
// or "gpu") and fills it with the pattern of seed (through WriteAt for
// device memory). export, if not nil, exports the buffer as a DMA-BUF for
// verbs sessions. The pool owns buf.
func NewBufferPool(buf Memory, mem string, export func() (int, int64, error), seed uint64) (*Pool, error) {
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
	return &Pool{size: buf.Size(), seed: seed, mem: mem, host: buf.Host(), buf: buf, export: export}, nil
}

// SetGPUDirectFlush gives a device pool the backend's flush of GPUDirect
// RDMA writes (cuFlushGPUDirectRDMAWrites where the device does not
// order them): the server calls it before it reads the pool through the
// device after RDMA WRITEs, and when a writing client asks before it
// verifies what it stored. Call it before serving.
func (p *Pool) SetGPUDirectFlush(f func() error) { p.flush = f }

// flushRemoteWrites flushes the RDMA writes into the pool, where it has
// a flush and a session may have written by RDMA.
func (p *Pool) flushRemoteWrites() error {
	if p.flush == nil || !p.remoteWrites.Load() {
		return nil
	}
	if err := p.flush(); err != nil {
		return fmt.Errorf("flush GPUDirect RDMA writes into the pool: %w", err)
	}
	return nil
}

// Size is the pool's length in bytes.
func (p *Pool) Size() int64 { return p.size }

// Seed is the pattern seed the pool is filled with.
func (p *Pool) Seed() uint64 { return p.seed }

// Mem is "host" or "gpu".
func (p *Pool) Mem() string { return p.mem }

// Host returns the pool's bytes when it is host memory, else nil.
func (p *Pool) Host() []byte { return p.host }

// Buffer returns the backend buffer of a buffer pool, else nil.
func (p *Pool) Buffer() Memory { return p.buf }

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
