package peer

import (
	"context"
	"fmt"

	"github.com/kvtier/kvtier/rdma"
)

// A Source is where a client's writes (stores) leave from: host memory;
// device memory the NIC reads (GPUDirect RDMA); or device memory first
// copied into a pinned host bounce buffer by Download before each write.
// Its Path uses the names of a Destination's. The remote tier and MB2
// both store through one.
type Source struct {
	Path string // DestHost, DestGPUDirect or DestBounce
	// Host is the host memory writes leave from: the source itself, or
	// the bounce buffer.
	Host []byte
	// Device is the device memory of the gpudirect and bounce paths.
	Device DeviceMem
	// Download copies the ranges of list from Device (at their Dst
	// offsets) to the same offsets of the bounce buffer and waits for
	// the copy.
	Download func(list []Chunk) error
	// Why says why a device source is not GPUDirect ("" otherwise).
	Why string
}

// Write pushes list from s into the peer's pool. On the bounce path the
// download from the device comes first, so a Write is timed from the
// device's memory on every path.
func (c *Client) Write(ctx context.Context, s *Source, list []Chunk) error {
	switch s.Path {
	case DestGPUDirect:
		return c.WriteFromDevice(ctx, s.Device, list)
	case DestBounce:
		if err := s.Download(list); err != nil {
			return fmt.Errorf("peer: device to bounce buffer: %w", err)
		}
		return c.WriteChunks(ctx, s.Host, list)
	case DestHost:
		return c.WriteChunks(ctx, s.Host, list)
	}
	return fmt.Errorf("peer: unknown source path %q", s.Path)
}

// HostSource returns a source in host memory src, registered for the
// client's transport ahead of timing.
func (c *Client) HostSource(src []byte) (*Source, error) {
	if err := c.PrepareWrite(src); err != nil {
		return nil, err
	}
	return &Source{Path: DestHost, Host: src}, nil
}

// DeviceSource returns a source in device memory dev: GPUDirect when a
// write of probe from dev into the peer's pool succeeds (verbs with a
// DMA-BUF export or a peer-memory module) within the probe timeout, else
// the bounce buffer and download that bounce returns. As for
// DeviceDestination, a failed probe leaves the client on a fresh
// endpoint, and Why says what stood in GPUDirect's way. The probe may
// have written dev's bytes into the peer's pool at probe's chunks.
func (c *Client) DeviceSource(ctx context.Context, dev DeviceMem, probe []Chunk,
	bounce func() ([]byte, func([]Chunk) error, error)) (*Source, error) {
	why, err := c.probeGPUDirect(ctx, "write", func(ctx context.Context) error { return c.WriteFromDevice(ctx, dev, probe) })
	if err != nil {
		return nil, err
	}
	if why == nil {
		return &Source{Path: DestGPUDirect, Device: dev}, nil
	}
	host, download, err := bounce()
	if err != nil {
		return nil, fmt.Errorf("peer: bounce buffer: %w", err)
	}
	if err := c.PrepareWrite(host); err != nil {
		return nil, err
	}
	return &Source{Path: DestBounce, Host: host, Device: dev, Download: download, Why: why.Error()}, nil
}

// WriteFromDevice writes straight from device memory into the peer's
// pool (GPUDirect RDMA: the NIC reads the device memory). It needs
// transport verbs, a session that may write, and a DMA-BUF export or
// nvidia-peermem; otherwise the error wraps rdma.ErrUnsupported.
func (c *Client) WriteFromDevice(ctx context.Context, src DeviceMem, list []Chunk) error {
	if c.verbs == nil {
		return fmt.Errorf("peer: device memory over tcp: %w", rdma.ErrUnsupported)
	}
	if err := c.mayWrite(); err != nil {
		return err
	}
	if err := c.check("source", src.Size, list); err != nil {
		return err
	}
	return c.verbs.writeDevice(ctx, src, list)
}
