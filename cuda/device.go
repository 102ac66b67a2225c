package cuda

/*
#include "cudawrap.h"
*/
import "C"

import (
	"fmt"
	"strings"
)

// An Attr is a CUdevice_attribute.
type Attr int

// Device attributes kvtier reads (values from CUDA's cuda.h).
const (
	AttrMultiprocessorCount  Attr = 16
	AttrPCIBusID             Attr = 33
	AttrPCIDeviceID          Attr = 34
	AttrAsyncEngineCount     Attr = 40
	AttrUnifiedAddressing    Attr = 41
	AttrPCIDomainID          Attr = 50
	AttrComputeCapMajor      Attr = 75
	AttrComputeCapMinor      Attr = 76
	AttrCanUseStreamMemOps   Attr = 92 // _V1 in CUDA 12 headers; see CanHoldStreams
	AttrGPUDirectRDMASupport Attr = 116
	AttrDMABufSupported      Attr = 124
)

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
	var n C.int
	var e C.kv_cuda_err
	if err := d.err(C.kv_cuda_device_count(d.l, &n, &e), &e); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device describes device ordinal.
func (d *Driver) Device(ordinal int) (DeviceInfo, error) {
	var name [256]C.char
	var bus [64]C.char
	var total C.size_t
	var e C.kv_cuda_err
	rc := C.kv_cuda_device_info(d.l, C.int(ordinal), &name[0], C.int(len(name)), &bus[0], C.int(len(bus)), &total, &e)
	if err := d.err(rc, &e); err != nil {
		return DeviceInfo{}, fmt.Errorf("device %d: %w", ordinal, err)
	}
	info := DeviceInfo{
		Ordinal:     ordinal,
		Name:        C.GoString(&name[0]),
		BusID:       strings.ToLower(C.GoString(&bus[0])),
		MemoryBytes: int64(total),
		Attrs:       map[Attr]int{},
	}
	for _, a := range []Attr{AttrMultiprocessorCount, AttrPCIBusID, AttrPCIDeviceID, AttrPCIDomainID,
		AttrAsyncEngineCount, AttrUnifiedAddressing, AttrComputeCapMajor, AttrComputeCapMinor,
		AttrCanUseStreamMemOps, AttrGPUDirectRDMASupport, AttrDMABufSupported} {
		if v, err := d.Attribute(ordinal, a); err == nil {
			info.Attrs[a] = v
		}
	}
	return info, nil
}

// Attribute reads one device attribute.
func (d *Driver) Attribute(ordinal int, a Attr) (int, error) {
	var v C.int
	var e C.kv_cuda_err
	if err := d.err(C.kv_cuda_device_attr(d.l, C.int(ordinal), C.int(a), &v, &e), &e); err != nil {
		return 0, err
	}
	return int(v), nil
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
	ctx     C.CUcontext
}

// PrimaryContext retains device ordinal's primary context.
func (d *Driver) PrimaryContext(ordinal int) (*Context, error) {
	var ctx C.CUcontext
	var e C.kv_cuda_err
	if err := d.err(C.kv_cuda_ctx_retain(d.l, C.int(ordinal), &ctx, &e), &e); err != nil {
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
	var e C.kv_cuda_err
	c.ctx = nil
	return c.d.err(C.kv_cuda_ctx_release(c.d.l, C.int(c.ordinal), &e), &e)
}

// MemInfo returns the device's free and total memory.
func (c *Context) MemInfo() (free, total int64, err error) {
	var f, t C.size_t
	var e C.kv_cuda_err
	if err := c.d.err(C.kv_cuda_mem_info(c.d.l, c.ctx, &f, &t, &e), &e); err != nil {
		return 0, 0, err
	}
	return int64(f), int64(t), nil
}

// DMABuf exports [ptr, ptr+size) of device memory as a DMA-BUF file
// descriptor (cuMemGetHandleForAddressRange). ptr and size must be page
// aligned. The caller closes the descriptor.
func (c *Context) DMABuf(ptr uint64, size int64) (int, error) {
	var fd C.int
	var e C.kv_cuda_err
	if err := c.d.err(C.kv_cuda_dmabuf(c.d.l, c.ctx, C.CUdeviceptr(ptr), C.size_t(size), &fd, &e), &e); err != nil {
		return -1, err
	}
	return int(fd), nil
}
