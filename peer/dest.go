package peer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Where a read's bytes land (the path of a Destination).
const (
	DestHost      = "host"      // straight into host memory
	DestGPUDirect = "gpudirect" // RDMA READ straight into device memory
	DestBounce    = "bounce"    // into pinned host memory, then one copy to the device
)

// A Destination is where a client's reads land: host memory; device
// memory written by the NIC (GPUDirect RDMA); or device memory reached
// through a pinned host bounce buffer that Upload copies to the device
// after each read. The remote tier and MB2 both read through one.
type Destination struct {
	Path string // DestHost, DestGPUDirect or DestBounce
	// Host is the host memory reads land in: the destination itself, or
	// the bounce buffer.
	Host []byte
	// Device is the device memory of the gpudirect and bounce paths.
	Device DeviceMem
	// Upload copies the ranges of list from the bounce buffer (at their
	// Dst offsets) to the same offsets of Device and waits for the copy.
	Upload func(list []Chunk) error
	// Why says why a device destination is not GPUDirect ("" otherwise).
	Why string
}

// Read brings list into d. On the bounce path it returns once the bytes
// are in device memory, so a Read is timed until then on every path.
func (c *Client) Read(ctx context.Context, d *Destination, list []Chunk) error {
	switch d.Path {
	case DestGPUDirect:
		return c.ReadToDevice(ctx, d.Device, list)
	case DestBounce:
		if err := c.ReadChunks(ctx, d.Host, list); err != nil {
			return err
		}
		if err := d.Upload(list); err != nil {
			return fmt.Errorf("peer: bounce to device: %w", err)
		}
		return nil
	case DestHost:
		return c.ReadChunks(ctx, d.Host, list)
	}
	return fmt.Errorf("peer: unknown destination path %q", d.Path)
}

// HostDestination returns a destination in host memory dst, registered
// for the client's transport ahead of timing.
func (c *Client) HostDestination(dst []byte) (*Destination, error) {
	if err := c.Prepare(dst); err != nil {
		return nil, err
	}
	return &Destination{Path: DestHost, Host: dst}, nil
}

// DefaultProbeTimeout bounds the GPUDirect probe read: a probe into
// memory the NIC cannot write (no peer-memory module, ACS on) may never
// complete, and the fallback should not wait for the endpoint's 30 s.
const DefaultProbeTimeout = 2 * time.Second

// DeviceDestination returns a destination in device memory dev:
// GPUDirect when a read of probe into dev succeeds (verbs with a DMA-BUF
// export or a peer-memory module) within the probe timeout, else the
// bounce buffer and upload that bounce returns. A failed probe may leave
// the endpoint unusable (its QPs in the error state), so the bounce path
// reads through a fresh one: the client dials its peer again. Why says
// what stood in GPUDirect's way.
func (c *Client) DeviceDestination(ctx context.Context, dev DeviceMem, probe []Chunk,
	bounce func() ([]byte, func([]Chunk) error, error)) (*Destination, error) {
	why, err := c.probeGPUDirect(ctx, "read", func(ctx context.Context) error { return c.ReadToDevice(ctx, dev, probe) })
	if err != nil {
		return nil, err
	}
	if why == nil {
		return &Destination{Path: DestGPUDirect, Device: dev}, nil
	}
	host, upload, err := bounce()
	if err != nil {
		return nil, fmt.Errorf("peer: bounce buffer: %w", err)
	}
	if err := c.Prepare(host); err != nil {
		return nil, err
	}
	return &Destination{Path: DestBounce, Host: host, Device: dev, Upload: upload, Why: why.Error()}, nil
}

// probeGPUDirect runs probe, a read into device memory or (op "write")
// a write from it, and returns why GPUDirect cannot be used (nil when it
// can). A probe that failed once work requests were posted leaves the
// client on a fresh endpoint; err is a failure to get one, or ctx done.
func (c *Client) probeGPUDirect(ctx context.Context, op string, probe func(context.Context) error) (why, err error) {
	if c.verbs == nil {
		if op == "write" {
			return errors.New("transport tcp cannot read device memory"), nil
		}
		return errors.New("transport tcp cannot write device memory"), nil
	}
	timeout := c.verbs.opt.ProbeTimeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	pctx, cancel := context.WithTimeoutCause(ctx, timeout, errProbeTimeout)
	why = probe(pctx)
	cancel()
	if why == nil {
		return nil, nil
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if errors.Is(why, errProbeTimeout) {
		why = fmt.Errorf("GPUDirect probe %s: no completion within %v", op, timeout)
	}
	if c.verbs.ep.Usable() {
		return why, nil
	}
	fresh, err := c.verbs.fresh(ctx)
	if err != nil {
		return nil, fmt.Errorf("peer: after a failed GPUDirect probe (%v), a fresh endpoint: %w", why, err)
	}
	if err := c.verbs.retire(ctx); err != nil {
		fresh.close()
		return nil, fmt.Errorf("peer: after a failed GPUDirect probe (%v), ending its session: %w", why, err)
	}
	c.verbs = fresh
	return why, nil
}

// errProbeTimeout is the cause of a GPUDirect probe that took too long.
var errProbeTimeout = errors.New("GPUDirect probe timed out")
