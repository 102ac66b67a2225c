package tiers

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
)

func init() {
	Register(Spec{
		Name:    "remote",
		Summary: "read of the prefix's blocks from a peer's pool (RDMA READ over verbs, or TCP) into the working pool",
		Order:   2,
		Moves:   true,
		Timing:  Blocking,
		New:     func(env Env) Tier { return &remoteTier{env: env} },
	})
}

// A DMABufExporter is a backend that can export device memory as a
// DMA-BUF for GPUDirect RDMA (the cuda backend implements it).
type DMABufExporter interface {
	ExportDMABuf(b Buffer) (fd int, offset int64, err error)
}

// Remote paths beyond peer.PathLoopback/Intra/Inter: how bytes reach
// device memory on a GPU backend.
const (
	pathGPUDirect = "gpudirect"
	pathBounce    = "bounce"
)

// A remoteTier keeps the prefix's blocks at random slots of a peer's pool
// (an embedded loopback peer when Env.Peer is empty) and reads every chunk
// into the working pool: straight into it on the host backend or by
// GPUDirect RDMA, else into a pinned bounce buffer copied to the device.
type remoteTier struct {
	env Env

	embedded *peer.Embedded
	client   *peer.Client
	where    string // loopback | intra | inter
	path     string // where, or gpudirect | bounce on a device backend
	seed     uint64 // the peer pool's pattern seed

	list     []peer.Chunk // the whole working set, block by block
	perBlock int
	dst      Buffer // working pool
	bounce   Buffer // pinned mirror of the working pool (bounce path)
}

func (t *remoteTier) transport() string {
	if t.env.Transport == "" {
		return peer.TCP
	}
	return t.env.Transport
}

// Available says why the tier cannot run: verbs without a device.
func (t *remoteTier) Available() string {
	switch t.transport() {
	case peer.TCP:
		return ""
	case peer.Verbs:
		names, err := rdma.DeviceNames(t.env.Libs.IBVerbs)
		if err != nil {
			return "transport verbs: " + err.Error()
		}
		if len(names) == 0 {
			return "transport verbs: no RDMA device"
		}
		return ""
	}
	return fmt.Sprintf("unknown transport %q (want tcp or verbs)", t.env.Transport)
}

// SetupBytes is the host memory Setup allocates: the embedded peer's pool
// (when there is one), the working pool and its bounce mirror.
func (t *remoteTier) SetupBytes(maxBlocks int) int64 {
	g := t.env.Geometry
	n := int64(maxBlocks) * g.BlockBytes()
	if t.env.Peer == "" {
		n += int64(kv.PoolSlots(maxBlocks)) * g.BlockBytes()
	}
	if t.env.Backend.Name() != "host" {
		n += int64(maxBlocks) * g.BlockBytes()
	}
	return n
}

func (t *remoteTier) rdmaConfig() rdma.Config {
	return rdma.Config{Device: t.env.RDMADevice, GIDIndex: t.env.GIDIndex, Root: "/", Library: t.env.Libs.IBVerbs}
}

// Setup connects to the peer (starting an embedded one if needed), places
// maxBlocks blocks over its pool and allocates the working pool.
func (t *remoteTier) Setup(ctx context.Context, maxBlocks int) error {
	if maxBlocks <= 0 {
		return fmt.Errorf("remote: setup for %d blocks", maxBlocks)
	}
	t.Close()
	g, l := t.env.Geometry, t.env.Layout
	src := kv.Pool{Geometry: g, Layout: l, Slots: kv.PoolSlots(maxBlocks)}
	dstPool := kv.Pool{Geometry: g, Layout: l, Slots: maxBlocks}
	addr := t.env.Peer
	t.where = peer.PathTo(addr)
	if addr == "" {
		pool, err := peer.NewHostPool(src.Size(), t.env.Seed^0x7065657270)
		if err != nil {
			return fmt.Errorf("remote: embedded peer: %w", err)
		}
		e, err := peer.StartEmbedded(peer.ServerConfig{Pool: pool, Transport: t.transport(), RDMA: t.rdmaConfig(), Log: t.env.Log})
		if err != nil {
			pool.Close()
			return fmt.Errorf("remote: embedded peer: %w", err)
		}
		t.embedded, addr, t.where = e, e.Addr, peer.PathLoopback
	}
	conns := max(t.env.Conns, 1)
	c, err := peer.Dial(ctx, addr, peer.DialOptions{Transport: t.transport(), Conns: conns, RDMA: t.rdmaConfig()})
	if err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	t.client = c
	info := c.Info()
	if info.PoolBytes < src.Size() {
		return fmt.Errorf("remote: peer %s holds a pool of %d bytes, %d blocks need %d (start kvtier serve with a larger --pool)",
			addr, info.PoolBytes, maxBlocks, src.Size())
	}
	t.seed = info.Seed
	srcSlots, err := kv.Placement(t.env.Seed, src.Slots, maxBlocks)
	if err != nil {
		return err
	}
	dstSlots, err := kv.Placement(t.env.Seed^0x5bd1e995, dstPool.Slots, maxBlocks)
	if err != nil {
		return err
	}
	plan, err := kv.GatherPlan(src, srcSlots, dstPool, dstSlots)
	if err != nil {
		return err
	}
	t.list = make([]peer.Chunk, len(plan))
	for i, p := range plan {
		t.list[i] = peer.Chunk{Src: p.Src, Dst: p.Dst, Len: p.Bytes}
	}
	t.perBlock = g.ChunksPerBlock(l)
	b := t.env.Backend
	if t.dst, err = b.Alloc(Device, dstPool.Size()); err != nil {
		return fmt.Errorf("remote: working pool: %w", err)
	}
	t.path = t.where
	if t.dst.Host() == nil {
		t.path = pathBounce
		if t.transport() == peer.Verbs {
			// GPUDirect when the device memory registers: try one chunk.
			if err := c.ReadToDevice(ctx, t.deviceMem(), t.list[:1]); err == nil {
				t.path = pathGPUDirect
			} else if t.env.Log != nil {
				fmt.Fprintf(t.env.Log, "kvtier: remote: GPUDirect unavailable, using a pinned bounce buffer: %v\n", err)
			}
		}
		if t.path == pathBounce {
			if t.bounce, err = b.Alloc(Pinned, dstPool.Size()); err != nil {
				return fmt.Errorf("remote: bounce buffer: %w", err)
			}
		}
	}
	for _, b := range []Buffer{t.dst, t.bounce} {
		if b == nil {
			continue
		}
		if err := scrubAll(b); err != nil {
			return fmt.Errorf("remote: %w", err)
		}
	}
	return nil
}

func (t *remoteTier) deviceMem() peer.DeviceMem {
	d := peer.DeviceMem{Addr: t.dst.Addr(), Size: t.dst.Size()}
	if exp, ok := t.env.Backend.(DMABufExporter); ok {
		d.Export = func() (int, int64, error) { return exp.ExportDMABuf(t.dst) }
	}
	return d
}

// Scrub overwrites what a Fetch of p writes, in the working pool and in
// the bounce buffer, so Verify sees only what the next Fetch brought
// (stale bytes left in the bounce buffer could otherwise pass for a read
// that never happened).
func (t *remoteTier) Scrub(p Prefix) error {
	if t.dst == nil {
		return errors.New("remote: not set up")
	}
	list, err := t.reads(p)
	if err != nil {
		return err
	}
	cs := asCopies(list)
	for _, b := range []Buffer{t.dst, t.bounce} {
		if b == nil {
			continue
		}
		if err := scrubRanges(b, cs); err != nil {
			return fmt.Errorf("remote: %w", err)
		}
	}
	return nil
}

// reads returns the chunk reads of a fetch of p: one per chunk, or for
// the contiguous copy mode one read of the same payload.
func (t *remoteTier) reads(p Prefix) ([]peer.Chunk, error) {
	if t.client == nil || t.dst == nil {
		return nil, errors.New("remote: not set up")
	}
	n := p.Blocks * t.perBlock
	if p.Blocks <= 0 || n > len(t.list) {
		return nil, fmt.Errorf("remote: prefix of %d blocks, set up for %d", p.Blocks, len(t.list)/max(t.perBlock, 1))
	}
	list := t.list[:n]
	if t.env.Copy == Contiguous {
		plan := make([]kv.Copy, len(list))
		for i, c := range list {
			plan[i] = kv.Copy{Src: c.Src, Dst: c.Dst, Bytes: c.Len}
		}
		c, err := kv.ContiguousSpan(plan, t.client.Info().PoolBytes, t.dst.Size())
		if err != nil {
			return nil, err
		}
		return []peer.Chunk{{Src: c.Src, Dst: c.Dst, Len: c.Bytes}}, nil
	}
	return list, nil
}

// Fetch reads the first p.Blocks blocks into the working pool.
func (t *remoteTier) Fetch(ctx context.Context, p Prefix) error {
	list, err := t.reads(p)
	if err != nil {
		return err
	}
	switch t.path {
	case pathGPUDirect:
		return t.client.ReadToDevice(ctx, t.deviceMem(), list)
	case pathBounce:
		if err := t.client.ReadChunks(ctx, t.bounce.Host(), list); err != nil {
			return err
		}
		plan := make([]kv.Copy, len(list))
		for i, c := range list {
			plan[i] = kv.Copy{Dst: c.Dst, Src: c.Dst, Bytes: c.Len}
		}
		mode := t.env.Copy
		if !slices.Contains(t.env.Backend.CopyModes(), mode) {
			mode = PerCopy
		}
		return t.env.Backend.Copy(t.dst, t.bounce, plan, mode)
	}
	return t.client.ReadChunks(ctx, t.dst.Host(), list)
}

// asCopies turns peer reads into copy ranges (destination in the working
// pool, source in the peer's pool) for scrubbing and verification.
func asCopies(list []peer.Chunk) []kv.Copy {
	cs := make([]kv.Copy, len(list))
	for i, c := range list {
		cs[i] = kv.Copy{Dst: c.Dst, Src: c.Src, Bytes: c.Len}
	}
	return cs
}

// Verify checks every chunk of the working pool against the pattern the
// peer's pool holds at the chunk's source offset.
func (t *remoteTier) Verify(p Prefix) error {
	list, err := t.reads(p)
	if err != nil {
		return err
	}
	per := t.perBlock
	if len(list) == 1 && t.env.Copy == Contiguous {
		per = 1
	}
	cs := asCopies(list)
	if i, err := checkAll(t.dst, cs, t.seed); err != nil {
		return fmt.Errorf("remote: block %d chunk %d: %w", i/per, i%per, err)
	}
	return nil
}

// Attrs describes the transfer for the row.
func (t *remoteTier) Attrs() map[string]string {
	a := map[string]string{
		"transport": t.transport(),
		"src_mem":   "peer",
		"dst_mem":   string(Device),
		"device":    "tcp",
	}
	if t.path != "" {
		a["path"] = t.path
	} else if t.env.Peer == "" {
		a["path"] = peer.PathLoopback
	}
	if t.client != nil {
		info := t.client.Info()
		a["device"] = info.Device
		a["peer_mem"] = info.Mem
		if info.RateGbps > 0 {
			a["link_gbps"] = fmt.Sprint(info.RateGbps / 8)
		}
	}
	return a
}

// Work is 0: the tier moves bytes.
func (t *remoteTier) Work(p Prefix) float64 { return 0 }

// Close disconnects, frees the pools and stops an embedded peer.
func (t *remoteTier) Close() error {
	var errs []error
	if t.client != nil {
		errs = append(errs, t.client.Close())
		t.client = nil
	}
	for _, b := range []*Buffer{&t.dst, &t.bounce} {
		if *b != nil {
			errs = append(errs, (*b).Close())
			*b = nil
		}
	}
	if t.embedded != nil {
		errs = append(errs, t.embedded.Close())
		t.embedded = nil
	}
	return errors.Join(errs...)
}
