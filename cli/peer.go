package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/tiers"
)

// PeerUnreachable returns the exit status of a command whose peer check
// failed with err: interrupted where Ctrl-C ended the handshake, bad
// input otherwise.
func (c *Call) PeerUnreachable(ctx context.Context, err error) int {
	if ctx.Err() != nil {
		c.Logf("interrupted while connecting to the peer; nothing written")
		return ExitInterrupted
	}
	return c.UsageErr(err)
}

// PeerReachable reports a kvtier serve peer that does not complete a
// handshake within five seconds (nothing listening, or not a kvtier
// peer), naming the flag; commands check it before they create a
// results directory. Every peer also serves TCP clients, so TCP asks for
// all.
func PeerReachable(ctx context.Context, addr, token string) error {
	c, err := peer.Dial(ctx, addr, peer.DialOptions{Transport: peer.TCP, Timeout: 5 * time.Second, Token: token})
	if err != nil {
		return option.Errorf("peer", "%s: unreachable: %w", addr, err)
	}
	return c.Close()
}

// VerbsProblem phrases an endpoint failure for a one-line error: a
// missing library or device always says "no RDMA device".
func VerbsProblem(err error) error {
	switch {
	case errors.Is(err, rdma.ErrNoDevice):
		return fmt.Errorf("--transport verbs: %w", err)
	case errors.Is(err, rdma.ErrNoLibrary):
		return fmt.Errorf("--transport verbs: no RDMA device (%w)", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "GID index") {
		return fmt.Errorf("--gid-index: %w", err)
	}
	return fmt.Errorf("--transport verbs: %w", err)
}

// VerbsReady says whether this machine can open the verbs endpoint cfg
// describes, as a one-line reason ("no RDMA device", a GID index that
// does not exist) when it cannot.
func VerbsReady(cfg rdma.Config) error {
	names, err := rdma.DeviceNames(cfg.Library)
	if err != nil {
		return VerbsProblem(err)
	}
	if len(names) == 0 {
		return VerbsProblem(rdma.ErrNoDevice)
	}
	ep, err := rdma.Open(cfg)
	if err != nil {
		return VerbsProblem(err)
	}
	return ep.Close()
}

// A Pool says what pool a peer serves: kvtier serve's and each rank of
// kvtier mesh.
type Pool struct {
	Mem     string              // peer.HostMem or peer.GPUMem
	Size    int64               // bytes
	Seed    uint64              // of the data pattern
	Backend tiers.BackendConfig // the cuda backend's, for GPUMem
}

// Open fills the pool with the pattern: anonymous host memory, or device
// memory of the cuda backend (exportable as a DMA-BUF where the backend
// can) for GPUMem. gpuBus is the PCI bus id of the pool's GPU ("" for
// host memory), for --rdma-device auto.
func (o Pool) Open(ctx context.Context) (p *peer.Pool, gpuBus string, done func(), err error) {
	if o.Mem != peer.GPUMem {
		p, err := peer.NewHostPool(o.Size, o.Seed)
		return p, "", func() { p.Close() }, option.Wrap("pool", err)
	}
	b, _, err := tiers.OpenBackend(ctx, "cuda", o.Backend)
	if err != nil {
		return nil, "", nil, option.Wrap("mem", err)
	}
	gpuBus = GPUBus(b, true)
	buf, err := b.Alloc(tiers.Device, o.Size)
	if err != nil {
		b.Close()
		return nil, "", nil, option.Wrap("mem", err)
	}
	var export func() (int, int64, error)
	if exp, ok := b.(tiers.DMABufExporter); ok {
		export = func() (int, int64, error) { return exp.ExportDMABuf(buf) }
	}
	p, err = peer.NewBufferPool(buf, peer.GPUMem, export, o.Seed)
	if err != nil {
		buf.Close()
		b.Close()
		return nil, "", nil, err
	}
	if f, ok := b.(tiers.GPUDirectFlusher); ok {
		p.SetGPUDirectFlush(f.FlushGPUDirectWrites)
	}
	return p, gpuBus, func() { p.Close(); b.Close() }, nil
}

// OpenBackends opens the backend f names: one, or with --gpu all one per
// GPU the driver sees, in ordinal order. why says why backends auto
// passed over did not open. Its errors are option errors naming the flag
// at fault.
func OpenBackends(ctx context.Context, f *BackendFlags, cfg tiers.BackendConfig) (bs []tiers.Backend, why []string, err error) {
	b, why, err := tiers.OpenBackend(ctx, f.Name, cfg)
	if err != nil {
		return nil, why, option.Wrap("backend", err)
	}
	bs = []tiers.Backend{b}
	if !f.All {
		return bs, why, nil
	}
	counter, ok := b.(interface{ DeviceCount() (int, error) })
	if !ok {
		CloseAll(bs, cfg.Log)
		return nil, why, option.Errorf("gpu", "all spreads the tiers over GPUs, and the %s backend has none", b.Name())
	}
	n, err := counter.DeviceCount()
	for i := 1; err == nil && i < n; i++ {
		cfg.GPU = i
		var bi tiers.Backend
		if bi, _, err = tiers.OpenBackend(ctx, b.Name(), cfg); err == nil {
			bs = append(bs, bi)
		}
	}
	if err != nil {
		CloseAll(bs, cfg.Log)
		return nil, why, option.Wrap("gpu", fmt.Errorf("all: %w", err))
	}
	return bs, why, nil
}

// CloseAll closes every backend of bs, warning of failures on log.
func CloseAll(bs []tiers.Backend, log io.Writer) {
	for _, b := range bs {
		if err := b.Close(); err != nil {
			fmt.Fprintf(log, "kvtier: warning: %v\n", err)
		}
	}
}
