package cuda

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/kvtier/kvtier/csrc/cudawrap"
	"github.com/kvtier/kvtier/internal/bounds"
)

// DeviceMem is device memory from cuMemAlloc.
type DeviceMem struct {
	c    *Context
	ptr  uint64
	size int64
}

// AllocDevice allocates size bytes of device memory (not initialised).
func (c *Context) AllocDevice(size int64) (*DeviceMem, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cuda: device allocation of %d bytes", size)
	}
	p, st := c.d.l.MemAlloc(c.ctx, size)
	if err := c.d.err(st); err != nil {
		return nil, fmt.Errorf("alloc %d device bytes: %w", size, err)
	}
	return &DeviceMem{c: c, ptr: p, size: size}, nil
}

// Ptr is the device pointer of byte 0.
func (m *DeviceMem) Ptr() uint64 { return m.ptr }

// Size is the allocation's size in bytes.
func (m *DeviceMem) Size() int64 { return m.size }

// ReadAt copies device bytes into p, synchronously. Fewer than len(p)
// bytes are read, with io.EOF, when p runs past the end.
func (m *DeviceMem) ReadAt(p []byte, off int64) (int, error) {
	if m.ptr == 0 {
		return 0, errFreed
	}
	n, eof := bounds.ReadAt("cuda: device memory", m.size, off, len(p))
	if n == 0 {
		return 0, eof
	}
	// p is Go memory: the shim copies into it during the call and keeps
	// nothing.
	if err := m.c.d.err(m.c.d.l.DtoH(m.c.ctx, p[:n], m.ptr+uint64(off))); err != nil {
		return 0, err
	}
	return n, eof
}

// WriteAt copies p to device memory at off, synchronously.
func (m *DeviceMem) WriteAt(p []byte, off int64) (int, error) {
	if m.ptr == 0 {
		return 0, errFreed
	}
	if err := bounds.WriteAt("cuda: device memory", m.size, off, len(p)); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := m.c.d.err(m.c.d.l.HtoD(m.c.ctx, m.ptr+uint64(off), p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// errFreed is the error of a read or write of device memory already freed:
// its address may belong to another allocation by then.
var errFreed = errors.New("cuda: device memory: freed")

// Free releases the memory.
func (m *DeviceMem) Free() error {
	if m.ptr == 0 {
		return nil
	}
	p := m.ptr
	m.ptr = 0
	return m.c.d.err(m.c.d.l.MemFree(m.c.ctx, p))
}

// Host memory flags for AllocHost.
const (
	HostPortable  = cudawrap.MemHostAllocPortable
	HostDeviceMap = cudawrap.MemHostAllocDeviceMap
)

// HostMem is page-locked host memory: allocated by cuMemHostAlloc, or
// memory the caller owns registered with cuMemHostRegister.
type HostMem struct {
	c          *Context
	ptr        unsafe.Pointer
	size       int64
	registered bool
}

// AllocHost allocates size bytes of pinned host memory with the given
// HostPortable / HostDeviceMap flags.
func (c *Context) AllocHost(size int64, flags int) (*HostMem, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cuda: host allocation of %d bytes", size)
	}
	p, st := c.d.l.HostAlloc(c.ctx, size, flags)
	if err := c.d.err(st); err != nil {
		return nil, fmt.Errorf("alloc %d pinned bytes: %w", size, err)
	}
	return &HostMem{c: c, ptr: p, size: size}, nil
}

// RegisterHost page-locks b, memory the caller owns outside the Go heap
// (mmap'd), with cuMemHostRegister (portable, device-mapped). Free
// unregisters it; the caller then unmaps it.
func (c *Context) RegisterHost(b []byte) (*HostMem, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("cuda: register of 0 bytes")
	}
	p, size := unsafe.Pointer(&b[0]), len(b)
	if err := c.d.err(c.d.l.HostRegister(c.ctx, p, int64(size), cudawrap.MemHostRegisterDefault)); err != nil {
		return nil, fmt.Errorf("register %d host bytes: %w", size, err)
	}
	return &HostMem{c: c, ptr: p, size: int64(size), registered: true}, nil
}

// Bytes returns the memory as a slice (C memory; valid until Free).
func (m *HostMem) Bytes() []byte { return unsafe.Slice((*byte)(m.ptr), m.size) }

// Addr is the host address of byte 0.
func (m *HostMem) Addr() uintptr { return uintptr(m.ptr) }

// Size is the memory's size in bytes.
func (m *HostMem) Size() int64 { return m.size }

// DevicePtr is the device address of the memory (allocated with
// HostDeviceMap, or registered).
func (m *HostMem) DevicePtr() (uint64, error) {
	d, st := m.c.d.l.HostDevicePtr(m.c.ctx, m.ptr)
	if err := m.c.d.err(st); err != nil {
		return 0, err
	}
	return d, nil
}

// Free releases (or unregisters) the memory.
func (m *HostMem) Free() error {
	if m.ptr == nil {
		return nil
	}
	p := m.ptr
	m.ptr = nil
	if m.registered {
		return m.c.d.err(m.c.d.l.HostUnregister(m.c.ctx, p))
	}
	return m.c.d.err(m.c.d.l.HostFree(m.c.ctx, p))
}
