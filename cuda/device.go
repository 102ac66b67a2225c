package cuda

import (
	"fmt"
	"strings"

	"github.com/kvtier/kvtier/csrc/cudawrap"
)

// An Attr is a CUdevice_attribute.
type Attr int

// Device attributes kvtier reads (values from CUDA's cuda.h, checked
// against NVIDIA's headers by csrc's ABI test).
const (
	AttrMultiprocessorCount  Attr = cudawrap.AttrMultiprocessorCount
	AttrPCIBusID             Attr = cudawrap.AttrPCIBusID
	AttrPCIDeviceID          Attr = cudawrap.AttrPCIDeviceID
	AttrAsyncEngineCount     Attr = cudawrap.AttrAsyncEngineCount
	AttrUnifiedAddressing    Attr = cudawrap.AttrUnifiedAddressing
	AttrPCIDomainID          Attr = cudawrap.AttrPCIDomainID
	AttrComputeCapMajor      Attr = cudawrap.AttrComputeCapMajor
	AttrComputeCapMinor      Attr = cudawrap.AttrComputeCapMinor
	AttrCanUseStreamMemOps   Attr = cudawrap.AttrCanUseStreamMemOps // _V1 in CUDA 12 headers; see CanHoldStreams
	AttrGPUDirectRDMASupport Attr = cudawrap.AttrGPUDirectRDMASupport
	AttrDMABufSupported      Attr = cudawrap.AttrDMABufSupported
	// AttrGPUDirectRDMAWritesOrdering says which GPUDirect RDMA writes the
	// device orders before its own later work; GPUDirectOrderingNone
	// means none: see FlushGPUDirectWrites.
	AttrGPUDirectRDMAWritesOrdering Attr = cudawrap.AttrGPUDirectRDMAWritesOrdering
)

// GPUDirectOrderingNone is AttrGPUDirectRDMAWritesOrdering's value where
// the device orders no GPUDirect RDMA writes.
const GPUDirectOrderingNone = cudawrap.GPUDirectRDMAWritesOrderingNone

// DeviceInfo describes one device as the driver sees it.
type DeviceInfo struct {
	Ordinal     int
	Name        string
	BusID       string // "0000:19:00.0", lower case as in sysfs
	MemoryBytes int64
	// Attributes read at open; a value the driver refused is absent.
	Attrs map[Attr]int
}

// DeviceCount is the number of CUDA devices.
func (d *Driver) DeviceCount() (int, error) {
	n, st := d.l.DeviceCount()
	if err := d.err(st); err != nil {
		return 0, err
	}
	return n, nil
}

// Device describes device ordinal.
func (d *Driver) Device(ordinal int) (DeviceInfo, error) {
	name, bus, total, st := d.l.DeviceInfo(ordinal)
	if err := d.err(st); err != nil {
		return DeviceInfo{}, fmt.Errorf("device %d: %w", ordinal, err)
	}
	info := DeviceInfo{
		Ordinal:     ordinal,
		Name:        name,
		BusID:       strings.ToLower(bus),
		MemoryBytes: total,
		Attrs:       map[Attr]int{},
	}
	for _, a := range []Attr{AttrMultiprocessorCount, AttrPCIBusID, AttrPCIDeviceID, AttrPCIDomainID,
		AttrAsyncEngineCount, AttrUnifiedAddressing, AttrComputeCapMajor, AttrComputeCapMinor,
		AttrCanUseStreamMemOps, AttrGPUDirectRDMASupport, AttrDMABufSupported, AttrGPUDirectRDMAWritesOrdering} {
		if v, err := d.Attribute(ordinal, a); err == nil {
			info.Attrs[a] = v
		}
	}
	return info, nil
}

// Attribute reads one device attribute.
func (d *Driver) Attribute(ordinal int, a Attr) (int, error) {
	v, st := d.l.DeviceAttr(ordinal, int(a))
	if err := d.err(st); err != nil {
		return 0, err
	}
	return v, nil
}

// CanHoldStreams reports whether a stream can wait on a host-mapped flag
// (cuStreamWaitValue32): the function must be present and the device must
// allow stream memory operations. Note: CUDA 12 enables the v2 memory
// operations on every device, and attribute 92 became the _V1 flag, so a
// 12.0+ driver with the function is taken as able even when it reads 0.
func (d *Driver) CanHoldStreams(info DeviceInfo) bool {
	if !d.Has("cuStreamWaitValue32") {
		return false
	}
	return info.Attrs[AttrCanUseStreamMemOps] == 1 || d.Version >= 12000
}

// A Context is a device's primary context, retained.
type Context struct {
	d       *Driver
	ordinal int
	ctx     cudawrap.Ctx
}

// PrimaryContext retains device ordinal's primary context.
func (d *Driver) PrimaryContext(ordinal int) (*Context, error) {
	ctx, st := d.l.CtxRetain(ordinal)
	if err := d.err(st); err != nil {
		return nil, fmt.Errorf("device %d: %w", ordinal, err)
	}
	return &Context{d: d, ordinal: ordinal, ctx: ctx}, nil
}

// Driver returns the driver the context belongs to.
func (c *Context) Driver() *Driver { return c.d }

// Ordinal is the context's device.
func (c *Context) Ordinal() int { return c.ordinal }

// Release drops the retained primary context.
func (c *Context) Release() error {
	if c.ctx == nil {
		return nil
	}
	c.ctx = nil
	return c.d.err(c.d.l.CtxRelease(c.ordinal))
}

// MemInfo returns the device's free and total memory.
func (c *Context) MemInfo() (free, total int64, err error) {
	f, t, st := c.d.l.MemInfo(c.ctx)
	if err := c.d.err(st); err != nil {
		return 0, 0, err
	}
	return f, t, nil
}

// AddressRange returns the allocation that holds device address ptr:
// its base and size (cuMemGetAddressRange).
func (c *Context) AddressRange(ptr uint64) (base uint64, size int64, err error) {
	base, size, st := c.d.l.AddressRange(c.ctx, ptr)
	if err := c.d.err(st); err != nil {
		return 0, 0, err
	}
	return base, size, nil
}

// DMABuf exports [ptr, ptr+size) of device memory as a DMA-BUF file
// descriptor (cuMemGetHandleForAddressRange). ptr and size must be page
// aligned and lie in one allocation (see AddressRange). The caller closes
// the descriptor.
func (c *Context) DMABuf(ptr uint64, size int64) (int, error) {
	fd, st := c.d.l.DMABuf(c.ctx, ptr, size)
	if err := c.d.err(st); err != nil {
		return -1, err
	}
	return fd, nil
}

// NeedsGPUDirectFlush reports whether reads of GPUDirect RDMA writes into
// the device must first flush them (FlushGPUDirectWrites): the device
// reports no write ordering. A driver that does not know the attribute
// predates it and is taken as ordering nothing.
func (i DeviceInfo) NeedsGPUDirectFlush() bool {
	v, ok := i.Attrs[AttrGPUDirectRDMAWritesOrdering]
	return !ok || v == GPUDirectOrderingNone
}

// FlushGPUDirectWrites makes the GPUDirect RDMA writes a NIC has done into
// the context's device so far visible to the context's later work
// (cuFlushGPUDirectRDMAWrites, CUDA 11.3+). errors.Is(err,
// ErrUnsupported) where the driver lacks it.
func (c *Context) FlushGPUDirectWrites() error {
	return c.d.err(c.d.l.FlushGPUDirect(c.ctx))
}
