package tiers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

func init() {
	Register(Spec{
		Desc:   tierspec.Remote,
		Timing: Blocking,
		New: func(env Env) Tier {
			return &remoteTier{env: env, opts: *OptionsOf(env, NewRemoteOptions)}
		},
		NewOptions: func() Options { return NewRemoteOptions() },
		Columns: []results.Column{
			results.Text("peer_mem", "remote: the peer's pool memory: host | gpu"),
			results.Text("device_reason", "verbs: why that NIC (--rdma-device auto: nearest the GPU in use)"),
			results.Int("ib_tc", "", "verbs: the QPs' traffic class (--ib-tc, NCCL_IB_TC)"),
			results.Int("ib_sl", "", "verbs: the QPs' service level (--ib-sl, NCCL_IB_SL)"),
		},
	})
}

// RemoteOptions are the remote tier's own options.
type RemoteOptions struct {
	Peer string // HOST:PORT of a kvtier serve peer; "" starts an embedded loopback peer
	// ClientSettings are how the tier reaches the peer, as MB2 does; the
	// command line fills in their Token and Library (PeerSettings).
	peer.ClientSettings
}

// NewRemoteOptions returns the remote tier's defaults: an embedded
// loopback peer over TCP with peer.DefaultConns connections.
func NewRemoteOptions() *RemoteOptions {
	return &RemoteOptions{ClientSettings: peer.DefaultClientSettings(peer.DefaultConns)}
}

// PeerAddr returns --peer: "" for an embedded peer.
func (o *RemoteOptions) PeerAddr() string { return o.Peer }

// PeerSettings returns the settings the tier reaches its peer with.
func (o *RemoteOptions) PeerSettings() *peer.ClientSettings { return &o.ClientSettings }

// Fields declares peer, transport, conns, rdma-device and gid-index.
func (o *RemoteOptions) Fields() []option.Field {
	return []option.Field{
		{Name: "peer", Ptr: &o.Peer, Usage: "HOST:PORT of a kvtier serve peer for the remote tier (default: an embedded loopback peer)"},
		{Name: "transport", Ptr: &o.Transport, Usage: "remote tier transport: tcp or verbs"},
		{Name: "conns", Ptr: &o.Conns, Usage: "remote tier: " + peer.ConnsUsage},
		{Name: "rdma-device", Ptr: &o.RDMADevice, Usage: "RDMA device, e.g. mlx5_0; auto: the active port nearest the GPU in use, else the first active port (column device_reason)"},
		{Name: "gid-index", Ptr: &o.GIDIndex, Usage: "GID index (-1: RoCE v2 GIDs agreed with the peer, IPv4-mapped preferred)"},
		{Name: "ib-tc", Ptr: &o.IBTC, Usage: "RoCE traffic class of the QPs (0-255; default $NCCL_IB_TC, else 0)"},
		{Name: "ib-sl", Ptr: &o.IBSL, Usage: "InfiniBand service level of the QPs (0-15; default $NCCL_IB_SL, else 0)"},
		{Name: "idle-timeout", Ptr: &o.IdleTimeout, Usage: peer.IdleTimeoutUsage},
	}
}

// Validate reports every problem at once.
func (o *RemoteOptions) Validate() error {
	errs := o.Errors()
	if o.Peer != "" {
		if err := peer.CheckAddr(o.Peer); err != nil {
			errs = append(errs, option.Wrap("peer", err))
		}
	}
	return errors.Join(errs...)
}

// Settings records the remote tier's options.
func (o *RemoteOptions) Settings() map[string]string {
	m := map[string]string{"peer": o.Peer}
	o.Record(m)
	return m
}

// A DMABufExporter is a backend that can export device memory as a
// DMA-BUF for GPUDirect RDMA (the cuda backend implements it).
type DMABufExporter interface {
	ExportDMABuf(b Buffer) (fd int, offset int64, err error)
}

// A remoteTier keeps the prefix's blocks at random slots of a peer's pool
// (an embedded loopback peer when no peer is given) and reads every chunk
// into the working pool through a Dest: straight into it on the host
// backend, by GPUDirect RDMA, or through a pinned bounce buffer.
type remoteTier struct {
	env  Env
	opts RemoteOptions

	embedded *peer.Embedded
	client   *peer.Client
	where    string // loopback | intra | inter
	seed     uint64 // the peer pool's pattern seed

	list     []peer.Chunk // the whole working set, block by block
	perBlock int
	dst      Buffer // working pool
	dest     *Dest
	// rdma is the verbs endpoint configuration, its device picked once
	// (deviceWhy says why).
	rdma      *rdma.Config
	deviceWhy string

	push *Push // a store's; nil for a load
}

func (t *remoteTier) transport() string {
	if t.opts.Transport == "" {
		return peer.TCP
	}
	return t.opts.Transport
}

// Available says why the tier cannot run: verbs without a device.
func (t *remoteTier) Available() string {
	switch t.transport() {
	case peer.TCP:
		return ""
	case peer.Verbs:
		names, err := rdma.DeviceNames(t.opts.Library)
		if err != nil {
			return "transport verbs: " + err.Error()
		}
		if len(names) == 0 {
			return "transport verbs: no RDMA device"
		}
		return ""
	}
	return fmt.Sprintf("unknown transport %q (want tcp or verbs)", t.opts.Transport)
}

// SetupBytes is the host memory Setup allocates: the embedded peer's pool
// (when there is one), the working pool and its bounce mirror.
func (t *remoteTier) SetupBytes(maxBlocks int) int64 {
	g := t.env.Geometry
	n := int64(maxBlocks) * g.BlockBytes()
	if t.opts.Peer == "" {
		n += int64(kv.PoolSlots(maxBlocks)) * g.BlockBytes()
	}
	if t.env.Backend.Caps().DeviceMemory {
		n += int64(maxBlocks) * g.BlockBytes()
	}
	return n
}

// rdmaConfig is the verbs endpoint configuration, with the device picked
// (on first use) nearest the backend's GPU.
func (t *remoteTier) rdmaConfig() rdma.Config {
	if t.rdma == nil {
		cfg := t.opts.RDMA(root(t.env))
		bus := ""
		if b, ok := t.env.Backend.(*CUDABackend); ok {
			bus = b.Info().BusID
		}
		cfg, t.deviceWhy = peer.PickDevice(cfg, bus)
		t.rdma = &cfg
	}
	return *t.rdma
}

// peerAddr returns the peer's address: --peer, or an embedded loopback
// peer's with a pool of size bytes, started here (writable for a store).
func (t *remoteTier) peerAddr(size int64) (string, error) {
	t.where = peer.PathTo(t.opts.Peer)
	if t.opts.Peer != "" {
		return t.opts.Peer, nil
	}
	pool, err := peer.NewHostPool(size, t.env.Seed^0x7065657270)
	if err != nil {
		return "", fmt.Errorf("remote: embedded peer: %w", err)
	}
	e, err := peer.StartEmbedded(peer.ServerConfig{Pool: pool, Transport: t.transport(), RDMA: t.rdmaConfig(), Log: t.env.Log,
		Writable: t.env.stores()})
	if err != nil {
		pool.Close()
		return "", fmt.Errorf("remote: embedded peer: %w", err)
	}
	t.embedded, t.where = e, peer.PathLoopback
	return e.Addr, nil
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
	addr, err := t.peerAddr(src.Size())
	if err != nil {
		return err
	}
	conns := max(t.opts.Conns, 1)
	c, err := peer.Dial(ctx, addr, peer.DialOptions{Transport: t.transport(), Conns: conns, RDMA: t.rdmaConfig(), IdleTimeout: t.opts.IdleTimeout, Token: t.opts.Token,
		Write: t.env.stores()})
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
	if t.dst, err = t.env.Backend.Alloc(Device, dstPool.Size()); err != nil {
		return fmt.Errorf("remote: working pool: %w", err)
	}
	if t.env.stores() {
		return t.setupPush(ctx, c)
	}
	if t.dest, err = NewDest(ctx, t.env.Backend, c, t.dst, t.list[:1], t.env.Copy); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	if t.dest.Why != "" && t.env.Log != nil {
		fmt.Fprintf(t.env.Log, "kvtier: remote: GPUDirect unavailable, using a pinned bounce buffer: %s\n", t.dest.Why)
	}
	return t.dest.Scrub([]peer.Chunk{{Dst: 0, Len: t.dst.Size()}})
}

// setupPush readies the stores through c from the working pool, saying
// why they bounce where GPUDirect would not do.
func (t *remoteTier) setupPush(ctx context.Context, c *peer.Client) error {
	var err error
	if t.push, err = NewPush(ctx, t.env.Backend, c, t.dst, t.list, t.env.Seed, t.env.Copy, t.opts.Peer != ""); err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	if t.push.Why != "" && t.env.Log != nil {
		fmt.Fprintf(t.env.Log, "kvtier: remote: stores: GPUDirect unavailable, using a pinned bounce buffer: %s\n", t.push.Why)
	}
	return nil
}

// Scrub overwrites what a Fetch of p writes, in the working pool and in
// the bounce buffer, so Verify sees only what the next Fetch brought
// (stale bytes left in the bounce buffer could otherwise pass for a read
// that never happened).
func (t *remoteTier) Scrub(p Prefix) error {
	list, err := t.reads(p)
	if err != nil {
		return err
	}
	if t.push != nil {
		return t.push.Scrub(list)
	}
	return t.dest.Scrub(list)
}

// reads returns the chunk reads of a fetch of p: one per chunk, or for
// the contiguous copy mode one read of the same payload.
func (t *remoteTier) reads(p Prefix) ([]peer.Chunk, error) {
	if t.client == nil || (t.dest == nil && t.push == nil) {
		return nil, fmt.Errorf("remote: %w", errNotSetUp)
	}
	n := p.Blocks * t.perBlock
	if p.Blocks <= 0 || n > len(t.list) {
		return nil, fmt.Errorf("remote: prefix of %d blocks, set up for %d", p.Blocks, len(t.list)/max(t.perBlock, 1))
	}
	list := t.list[:n]
	if t.env.Copy == Contiguous {
		c, err := kv.ContiguousSpan(ChunkCopies(list), t.client.Info().PoolBytes, t.dst.Size())
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
	if t.push != nil {
		return t.push.Store(ctx, list)
	}
	return t.client.Read(ctx, t.dest.Destination, list)
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
	verify := t.dest.Verify
	if t.push != nil {
		verify = func(l []peer.Chunk, _ uint64) (int, error) { return t.push.Verify(l) }
	}
	if i, err := verify(list, t.seed); err != nil {
		return fmt.Errorf("remote: block %d chunk %d: %w", i/per, i%per, err)
	}
	return nil
}

// Attrs describes the transfer for the row.
func (t *remoteTier) Attrs() map[string]string {
	a := map[string]string{
		"transport": t.transport(),
		"src_mem":   "peer",
		"dst_mem":   string(deviceMem(t.env.Backend)),
		"device":    "tcp",
	}
	switch {
	case t.dest != nil && t.dest.Path != peer.DestHost:
		a["path"], a["gpudirect_reason"] = t.dest.Path, t.dest.Why
	case t.push != nil && t.push.Path != peer.DestHost:
		a["path"], a["gpudirect_reason"] = t.push.Path, t.push.Why
	case t.where != "":
		a["path"] = t.where
	case t.opts.Peer == "":
		a["path"] = peer.PathLoopback
	}
	if t.env.stores() {
		a["src_mem"], a["dst_mem"] = a["dst_mem"], "peer"
	}
	if t.client != nil {
		info := t.client.Info()
		a["device"] = info.Device
		a["peer_mem"] = info.Mem
		if info.Transport == peer.Verbs {
			a["device_reason"], a["ib_tc"], a["ib_sl"] = t.deviceWhy, strconv.Itoa(t.opts.IBTC), strconv.Itoa(t.opts.IBSL)
		}
		if info.RateGbps > 0 {
			a["link_gb_per_s"] = fmt.Sprint(info.RateGbps / 8)
		}
	}
	return a
}

// Work is 0: the tier moves bytes.
func (t *remoteTier) Work(p Prefix) float64 { return 0 }

// Close disconnects, frees the pools and stops an embedded peer.
func (t *remoteTier) Close() error {
	var errs []error
	closeOnce(&errs, &t.push) // before the client: it restores the peer's pool
	closeOnce(&errs, &t.client)
	closeOnce(&errs, &t.dest)
	closeOnce(&errs, &t.dst)
	closeOnce(&errs, &t.embedded)
	return errors.Join(errs...)
}
