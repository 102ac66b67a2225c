package xfer

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system/meminfo"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// Backends are what a transfer measures with, opened by the caller.
type Backends struct {
	// Dst holds the destinations: the host backend for host memory, the
	// cuda backend of the destination GPU for GPU memory.
	Dst tiers.Backend
	// PeerCopy is the cuda backend of the source GPU of peer copies; nil
	// with PeerCopyWhy saying why it could not be opened.
	PeerCopy    tiers.PeerCopier
	PeerCopyWhy string
	// RDMA configures verbs endpoints (device, GID, sysfs root, library).
	RDMA rdma.Config
	// Faults are the test-only faults clients inject.
	Faults peer.Faults
}

// A Measurer times MB2's configurations through a Sampler: reads of
// each layout and size from a peer's pool (the chunks over the pool, a
// destination for them, verification), and GPU peer copies. Run uses
// one for kvtier transfer; kvtier mesh uses one per rank.
type Measurer struct {
	o       Options
	be      Backends
	log     io.Writer
	sampler *harness.Sampler
	saidWhy bool // said once that GPUDirect is unavailable
	// Decorate, when not nil, adds columns to every row.
	Decorate func(*results.Row)
}

// NewMeasurer returns a Measurer of o's configurations that writes its
// rows through sampler and its progress to log.
func NewMeasurer(o Options, be Backends, sampler *harness.Sampler, log io.Writer) *Measurer {
	return &Measurer{o: o, be: be, log: log, sampler: sampler}
}

// Run measures reads of each size and layout from each peer (an
// embedded loopback peer when none is given) and, when asked, GPU peer
// copies, writing one row per rep to the main file of suite in out (the
// transfer suite's transfer.csv). A peer that cannot be reached or goes
// away gives error rows and the run goes on with the next peer; ctx's
// error or a failed write ends it.
func Run(ctx context.Context, o Options, be Backends, out *harness.Output, suite results.Suite, log io.Writer) error {
	out.Manifest.Settings = o.Settings()
	out.Manifest.Settings["backend_used"] = be.Dst.Name()
	if err := out.WriteManifest(); err != nil {
		return err
	}
	sink, err := out.Open(suite.Main())
	if err != nil {
		return err
	}
	r := NewMeasurer(o, be, &harness.Sampler{Suite: suite.Name, Sink: sink, Log: log, Policy: o.Policy}, log)
	peers := o.Peers
	if len(peers) == 0 {
		peers = []string{""}
	}
	harness.ProgressOf(log).PlanWeights(r.weights(peers))
	for _, addr := range peers {
		if err := r.peer(ctx, addr); err != nil {
			return err
		}
	}
	if o.PeerCopy != nil {
		return r.PeerCopy(ctx, o.PeerCopy[0], o.PeerCopy[1])
	}
	return nil
}

// roughBytesPerSec is a rough rate of moving bytes, into a transfer's
// destination or into the embedded peer's pool as it is filled: the
// progress's ETA weighs configurations by the bytes they move at it, and
// only the ratios matter.
const roughBytesPerSec = 1e9

// weights are the estimated seconds of each configuration, in the order
// Run measures them: for each peer (the embedded one filling its pool
// first), direction, layout and size, every sample the policy takes of
// it; then the peer copies.
func (r *Measurer) weights(peers []string) []float64 {
	var out []float64
	sizes := func(setup float64) {
		for _, size := range r.o.Sizes {
			sec := float64(size) / roughBytesPerSec
			out = append(out, setup+sec*float64(r.o.Policy.Samples(sec)))
			setup = 0
		}
	}
	for _, addr := range peers {
		setup := 0.0
		if addr == "" {
			setup = float64(r.embeddedPoolBytes()) / roughBytesPerSec
		}
		for range r.o.directions() {
			for range r.o.Layouts {
				sizes(setup)
				setup = 0
			}
		}
	}
	if r.o.PeerCopy != nil {
		for range r.o.Layouts {
			sizes(0)
		}
	}
	return out
}

// embeddedPoolBytes sizes an embedded peer's pool: whole blocks, a
// quarter more than the largest size and at least one block more than it
// spans, so every size's blocks sit at random slots of a larger pool.
// Only sizes whose pool fits within 40% of free memory count (the client
// needs as much again): a size too large for this machine is a skipped
// row, and it must not make the peer fill a pool first.
func (r *Measurer) embeddedPoolBytes() int64 {
	if r.o.PoolBytes > 0 {
		return r.o.PoolBytes
	}
	limit := int64(math.MaxInt64)
	if avail, err := meminfo.Available(r.o.Root); err == nil {
		limit = avail * 2 / 5
	}
	bb := r.o.Geometry.BlockBytes()
	want := bb
	for _, s := range r.o.Sizes {
		if need := poolFor(s, bb); need <= limit {
			want = max(want, need)
		}
	}
	return want
}

// poolFor is the pool, in whole blocks of bb bytes, that holds size
// bytes' blocks at random slots: a quarter more than size, and at least
// one block more than size spans.
func poolFor(size, bb int64) int64 {
	spans := (size + bb - 1) / bb
	blocks := max((size+size/4+bb-1)/bb, spans+1)
	if blocks > math.MaxInt64/bb {
		return math.MaxInt64
	}
	return blocks * bb
}

// A Target is one peer being measured.
type Target struct {
	Name   string // the peer column: HOST:PORT, "embedded", "local"
	Path   string // the path column: intra, inter, loopback, peercopy
	Client *peer.Client
	Info   peer.Info
	Line   float64 // Gb/s, 0 unknown
	// Writer is the session stores push through, dialled at the first
	// store (a peer must grant writes, kvtier serve --writable); Close it
	// with Client.
	Writer *peer.Client
	addr   string // where Writer dials
}

// Dial connects to the peer at addr ("" starts an embedded loopback
// peer) and labels it as Run does: its path intra, inter or loopback.
// done closes the connection and the embedded peer.
func (r *Measurer) Dial(ctx context.Context, addr string) (t *Target, done func(), err error) {
	return r.dial(ctx, addr)
}

// dial connects to addr, starting an embedded peer for "".
func (r *Measurer) dial(ctx context.Context, addr string) (*Target, func(), error) {
	t := &Target{Name: addr, Path: r.o.Path}
	var emb *peer.Embedded
	if addr == "" {
		harness.ProgressOf(r.log).Wait("the embedded peer to start")
		pool, err := peer.NewHostPool(r.embeddedPoolBytes(), r.o.Seed^0x7065657270)
		if err != nil {
			return nil, nil, fmt.Errorf("embedded peer: %w", err)
		}
		cfg := peer.ServerConfig{Pool: pool, Transport: r.o.Transport, RDMA: r.be.RDMA, Log: r.log, Writable: r.o.stores()}
		if emb, err = peer.StartEmbedded(cfg); err != nil {
			pool.Close()
			return nil, nil, fmt.Errorf("embedded peer: %w", err)
		}
		addr, t.Name, t.Path = emb.Addr, "embedded", peer.PathLoopback
		fmt.Fprintf(r.log, "kvtier transfer: no peer given: measuring an embedded loopback peer (pool %s)\n", units.FormatBytes(pool.Size()))
	} else if t.Path == "" {
		t.Path = peer.PathTo(addr)
	}
	if err := r.connect(ctx, t, addr); err != nil {
		if emb != nil {
			emb.Close()
		}
		return nil, nil, err
	}
	return t, func() {
		t.Client.Close()
		if t.Writer != nil {
			t.Writer.Close()
		}
		if emb != nil {
			emb.Close()
		}
	}, nil
}

// connect dials the peer at addr into t with the options' transport,
// connections, token and idle timeout and the RDMA configuration.
func (r *Measurer) connect(ctx context.Context, t *Target, addr string) error {
	pr := harness.ProgressOf(r.log)
	pr.Wait("the handshake with peer " + addr)
	c, err := peer.Dial(ctx, addr, r.dialOptions(false))
	pr.Wait("")
	if err != nil {
		return err
	}
	t.Client, t.Info, t.addr = c, c.Info(), addr
	if t.Line = r.o.LineGbps; t.Line == 0 && r.o.Transport == peer.Verbs {
		t.Line = t.Info.RateGbps
	}
	return nil
}

// dialOptions are the options every session with a peer is dialled
// with; write asks for a session that may store.
func (r *Measurer) dialOptions(write bool) peer.DialOptions {
	return peer.DialOptions{Transport: r.o.Transport, Conns: r.o.Conns, RDMA: r.be.RDMA,
		Faults: r.be.Faults, Token: r.o.Token, IdleTimeout: r.o.IdleTimeout, Write: write}
}

// Open connects to the peer at addr and returns it as a Target labelled
// path, named by its address; Close its Client when done.
func (r *Measurer) Open(ctx context.Context, addr, path string) (*Target, error) {
	t := &Target{Name: addr, Path: path}
	if err := r.connect(ctx, t, addr); err != nil {
		return nil, err
	}
	return t, nil
}

// peer measures every layout and size against one peer ("" = embedded).
func (r *Measurer) peer(ctx context.Context, addr string) error {
	t, done, err := r.dial(ctx, addr)
	if err != nil && addr == "" {
		return harness.Refused(err) // the embedded peer could not start: nothing can run
	}
	if err != nil {
		return r.peerFailed(addr, err)
	}
	defer done()
	i := t.Info
	fmt.Fprintf(r.log, "kvtier transfer: peer %s (%s), pool %s %s, transport %s, device %s, %d conns\n",
		t.Name, t.Path, units.FormatBytes(i.PoolBytes), i.Mem, i.Transport, i.Device, r.o.Conns)
	for _, dir := range r.o.directions() {
		for _, layout := range r.o.Layouts {
			for _, size := range r.o.Sizes {
				if err := ctx.Err(); err != nil {
					return err
				}
				res, err := r.ConfigDir(ctx, t, dir, layout, size)
				if err != nil {
					return err
				}
				if res.Err != nil {
					// A transfer that fails is the peer or the path failing:
					// the rest of this peer would fail alike, or hang.
					fmt.Fprintf(r.log, "kvtier transfer: peer %s failed (%v): its remaining sizes are not measured\n", t.Name, res.Err)
					return nil
				}
			}
		}
	}
	return nil
}

// peerFailed writes one error row per configuration of a peer that could
// not be reached; only a failed write or a cancelled run stops the run.
func (r *Measurer) peerFailed(addr string, err error) error {
	for _, layout := range r.o.Layouts {
		for _, size := range r.o.Sizes {
			if werr := r.Fail(&Target{Name: addr, Path: r.o.Path}, layout, size, fmt.Errorf("peer %s: %w", addr, err)); werr != nil {
				return werr
			}
		}
	}
	return nil
}

// Fail writes the error row of one configuration of t that could not be
// measured (its peer unreachable or gone); only a failed write is
// returned.
func (r *Measurer) Fail(t *Target, layout string, size int64, err error) error {
	c := harness.Case{Row: r.row(t, layout, size), Label: r.label(t.Name, layout, size), Timer: &tiers.ClockTimer{}}
	return r.sampler.Fail(c, 0, err)
}

func (r *Measurer) label(peerName, layout string, size int64) string {
	return fmt.Sprintf("%-10s %-10s %9s", peerName, layout, units.FormatBytes(size))
}

// row returns the columns every row of one configuration shares.
func (r *Measurer) row(t *Target, layout string, size int64) results.Row {
	row := results.NewRow(r.sampler.Suite)
	row.Backend = r.be.Dst.Name()
	row.Transport = t.Info.Transport
	if row.Transport == "" {
		row.Transport = r.o.Transport
	}
	row.Tier = "remote"
	row.Layout = layout
	row.Model = r.o.Geometry.Model
	row.Bytes = size
	row.ChunkBytes = chunkBytes(r.o.Geometry, layout, size)
	row.Set("peer", t.Name)
	row.Set(results.ColPath, t.Path)
	row.Set(results.ColDevice, t.Info.Device)
	if row.Transport == peer.Verbs {
		row.Set("device_reason", r.o.DeviceReason)
		row.Set("ib_tc", r.o.IBTC)
		row.Set("ib_sl", r.o.IBSL)
	}
	row.Set("conns", r.o.Conns)
	row.Set(results.DirectionColumn, string(tiers.Load))
	row.Set(results.ColSrcMem, t.Info.Mem)
	row.Set(results.ColDstMem, r.o.DstMem)
	if r.o.DstMem == DstGPU {
		row.Set("gpu", r.be.Dst.Device())
	}
	if t.Line > 0 {
		row.Set(results.ColLineGBPerSecond, t.Line/8)
	}
	if r.Decorate != nil {
		r.Decorate(&row)
	}
	return row
}

func chunkBytes(g kv.Geometry, layout string, size int64) int64 {
	switch layout {
	case Layerwise:
		return g.ChunkBytes(kv.Layerwise)
	case Blockwise:
		return g.ChunkBytes(kv.Blockwise)
	}
	return size
}

// derive sets the columns computed from a rep's rate.
func derive(row *results.Row) {
	if lg := row.Float(results.ColLineGBPerSecond); lg > 0 {
		row.Set(results.ColLineFrac, row.GBps/lg)
	}
	if row.GBps > 0 {
		row.Set(results.ColT3GiB, 3*float64(1<<30)/(row.GBps*1e9))
		row.Set(results.ColT11_5GiB, 11.5*float64(1<<30)/(row.GBps*1e9))
	}
}

// OpenBackends opens what o needs: the host backend for host
// destinations or the cuda backend of cfg.GPU for GPU memory (an error
// there is bad input: nothing can be measured), and for peer copies the
// cuda backend of the source GPU, whose failure only becomes the reason
// of the peer-copy rows. close releases them.
func OpenBackends(ctx context.Context, o Options, cfg tiers.BackendConfig) (be Backends, close func(), err error) {
	var opened []tiers.Backend
	close = func() {
		for _, b := range opened {
			b.Close()
		}
	}
	name := "host"
	if o.DstMem == DstGPU {
		name = "cuda"
	}
	if be.Dst, _, err = tiers.OpenBackend(ctx, name, cfg); err != nil {
		return be, close, option.Wrap("dst-mem", err)
	}
	opened = append(opened, be.Dst)
	if o.DstMem == DstGPU && !be.Dst.Caps().DeviceMemory {
		close()
		return be, func() {}, option.Errorf("dst-mem", "backend %s has no GPU memory", be.Dst.Name())
	}
	if o.PeerCopy != nil {
		var b tiers.Backend
		if be.PeerCopy, b, be.PeerCopyWhy = OpenPeerCopier(ctx, cfg, o.PeerCopy[0]); b != nil {
			opened = append(opened, b)
		}
	}
	return be, close, nil
}

// OpenPeerCopier opens the cuda backend of GPU gpu for peer copies from
// it. Where it cannot, the copier is nil and why says why (the reason of
// the peer-copy rows); otherwise the caller closes the backend b.
func OpenPeerCopier(ctx context.Context, cfg tiers.BackendConfig, gpu int) (pc tiers.PeerCopier, b tiers.Backend, why string) {
	cfg.GPU = gpu
	b, _, err := tiers.OpenBackend(ctx, "cuda", cfg)
	if err != nil {
		return nil, nil, "peer copy needs two GPUs; " + err.Error()
	}
	pc, ok := b.(tiers.PeerCopier)
	if !ok {
		b.Close()
		return nil, nil, "backend " + b.Name() + " cannot copy between GPUs"
	}
	return pc, b, ""
}
