package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"strings"
	"syscall"
	"time"

	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// Transfer layouts: the two pool layouts plus one message of the size.
const (
	TransferLayerwise  = "layerwise"  // 16 KiB chunks (one per layer, K and V) at scattered offsets
	TransferBlockwise  = "blockwise"  // one chunk per block (1.5 MiB for Qwen3-Coder-30B-A3B)
	TransferContiguous = "contiguous" // one message
)

// TransferSummaryKeys are the columns transfer_summary.csv groups by.
var TransferSummaryKeys = []string{"peer", "path", "transport", "layout", "bytes", "conns", "device"}

// DefaultTransferSizes are 16 MiB to 16 GiB, doubling.
func DefaultTransferSizes() []int64 {
	var s []int64
	for n := int64(16 << 20); n <= 16<<30; n *= 2 {
		s = append(s, n)
	}
	return s
}

// ErrPeer is wrapped by Transfer's error when a peer could not be reached
// or went away mid-transfer: bad input for the command (exit 2), after
// every row already measured has been written.
var ErrPeer = errors.New("transfer stopped")

// TransferOptions are the resolved options of an MB2 transfer sweep.
type TransferOptions struct {
	// Peers are HOST:PORT of kvtier serve peers, measured in turn into
	// one transfer.csv (e.g. one on this host and one across the
	// network); empty starts an embedded loopback peer.
	Peers       []string
	Sizes       []int64
	Reps        int
	Warmup      int
	Layouts     []string
	Model       string
	BlockTokens int
	Conns       int    // TCP connections or RC QPs
	Transport   string // tcp | verbs
	Path        string // intra | inter; "" decides per peer
	// LineGbps is the link rate in Gb/s for line_frac; 0 takes the NIC's
	// rate on verbs and leaves it unknown on TCP.
	LineGbps   float64
	RDMADevice string
	GIDIndex   int
	Seed       uint64
	// PoolBytes sizes the embedded peer's pool; 0 fits the largest size
	// into free memory.
	PoolBytes int64
	SysRoot   string // "" means "/"

	geom tiers.Geometry
}

// DefaultTransferOptions are the options of a plain kvtier transfer.
func DefaultTransferOptions() TransferOptions {
	return TransferOptions{
		Sizes: DefaultTransferSizes(), Reps: 5, Warmup: 1,
		Layouts: []string{TransferLayerwise, TransferBlockwise, TransferContiguous},
		Model:   tiers.DefaultModel, BlockTokens: tiers.DefaultBlockTokens,
		Conns: 1, Transport: peer.TCP, GIDIndex: -1, Seed: 1,
	}
}

// Validate reports every problem at once.
func (o *TransferOptions) Validate() error {
	var errs []error
	if len(o.Sizes) == 0 {
		errs = append(errs, errors.New("--sizes: no sizes"))
	}
	if o.Reps < 1 {
		errs = append(errs, fmt.Errorf("--reps %d: want at least 1", o.Reps))
	}
	if o.Warmup < 0 {
		errs = append(errs, fmt.Errorf("--warmup %d: want 0 or more", o.Warmup))
	}
	if len(o.Layouts) == 0 {
		errs = append(errs, errors.New("--layout: no layouts"))
	}
	for _, l := range o.Layouts {
		switch l {
		case TransferLayerwise, TransferBlockwise, TransferContiguous:
		default:
			errs = append(errs, fmt.Errorf("--layout: unknown layout %q (known: layerwise, blockwise, contiguous)", l))
		}
	}
	if o.Conns < 1 || o.Conns > 64 {
		errs = append(errs, fmt.Errorf("--conns %d: want 1 to 64", o.Conns))
	}
	if o.Transport != peer.TCP && o.Transport != peer.Verbs {
		errs = append(errs, fmt.Errorf("--transport %q: want tcp or verbs", o.Transport))
	}
	if o.Path != "" && o.Path != peer.PathIntra && o.Path != peer.PathInter {
		errs = append(errs, fmt.Errorf("--path %q: want intra or inter", o.Path))
	}
	if o.LineGbps < 0 || math.IsNaN(o.LineGbps) {
		errs = append(errs, fmt.Errorf("--line-rate %v: want a positive rate in Gb/s", o.LineGbps))
	}
	if o.GIDIndex < -1 {
		errs = append(errs, fmt.Errorf("--gid-index %d: want -1 (automatic) or an index", o.GIDIndex))
	}
	for _, p := range o.Peers {
		if !strings.Contains(p, ":") {
			errs = append(errs, fmt.Errorf("--peer %q: want HOST:PORT", p))
		}
	}
	g, err := tiers.LookupModel(o.Model)
	if err != nil {
		errs = append(errs, fmt.Errorf("--model: %w", err))
	} else {
		if o.BlockTokens > 0 {
			g.BlockTokens = o.BlockTokens
		}
		o.geom = g
	}
	return errors.Join(errs...)
}

// A transferRun is one Transfer call.
type transferRun struct {
	o    TransferOptions
	sink *results.CSV
	log  io.Writer
	root string
}

// Transfer measures reads of each size, layout and peer and writes one
// row per rep to transfer.csv in out. A peer that cannot be reached or
// goes away ends the run with an error wrapping ErrPeer, after the error
// row; data mismatches are error rows and the run goes on.
func Transfer(ctx context.Context, o TransferOptions, out *Output, log io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if log == nil {
		log = io.Discard
	}
	r := &transferRun{o: o, log: log, root: o.SysRoot}
	if r.root == "" {
		r.root = "/"
	}
	if o.Transport == peer.Verbs {
		if names, err := rdma.DeviceNames(""); err != nil || len(names) == 0 {
			if err == nil {
				err = rdma.ErrNoDevice
			}
			return fmt.Errorf("--transport verbs: no RDMA device (%w)", err)
		}
	}
	sink, err := out.CSV(results.TransferFile, TransferSummaryKeys, results.TransferColumns...)
	if err != nil {
		return err
	}
	r.sink = sink
	out.Manifest.Settings = r.settings()
	out.WriteManifest()
	peers := o.Peers
	if len(peers) == 0 {
		peers = []string{""}
	}
	var failed bool
	for _, addr := range peers {
		if err := r.peer(ctx, addr); err != nil {
			if errors.Is(err, errMismatch) {
				failed = true
				continue
			}
			return err
		}
	}
	if failed {
		return ErrMeasurementFailed
	}
	return nil
}

func (r *transferRun) settings() map[string]string {
	o := r.o
	var sizes []string
	for _, s := range o.Sizes {
		sizes = append(sizes, units.FormatBytes(s))
	}
	return map[string]string{
		"peers": strings.Join(o.Peers, ","), "sizes": strings.Join(sizes, ","), "reps": fmt.Sprint(o.Reps),
		"warmup": fmt.Sprint(o.Warmup), "layouts": strings.Join(o.Layouts, ","), "model": o.geom.Model,
		"conns": fmt.Sprint(o.Conns), "transport": o.Transport, "path": o.Path, "line_rate_gbit": fmt.Sprint(o.LineGbps),
		"rdma_device": o.RDMADevice, "gid_index": fmt.Sprint(o.GIDIndex), "seed": fmt.Sprint(o.Seed),
	}
}

var errMismatch = errors.New("data mismatch")

// embeddedPoolBytes sizes an embedded peer's pool: a quarter more than
// the largest size, within 40% of free memory (the client needs as much
// again), whole blocks.
func (r *transferRun) embeddedPoolBytes() int64 {
	if r.o.PoolBytes > 0 {
		return r.o.PoolBytes
	}
	var want int64
	for _, s := range r.o.Sizes {
		want = max(want, s+s/4)
	}
	if avail, err := system.MemAvailable(r.root); err == nil {
		want = min(want, avail*2/5)
	}
	bb := r.o.geom.BlockBytes()
	return max(bb, want/bb*bb)
}

// peer measures every size and layout against one peer ("" = embedded).
func (r *transferRun) peer(ctx context.Context, addr string) error {
	o := r.o
	path := o.Path
	var emb *peer.Embedded
	rcfg := rdma.Config{Device: o.RDMADevice, GIDIndex: o.GIDIndex, Root: r.root}
	if addr == "" {
		pool, err := peer.NewHostPool(r.embeddedPoolBytes(), o.Seed^0x7065657270)
		if err != nil {
			return fmt.Errorf("embedded peer: %w", err)
		}
		if emb, err = peer.StartEmbedded(peer.ServerConfig{Pool: pool, Transport: o.Transport, RDMA: rcfg, Log: r.log}); err != nil {
			pool.Close()
			return fmt.Errorf("embedded peer: %w", err)
		}
		defer emb.Close()
		addr, path = emb.Addr, peer.PathLoopback
		fmt.Fprintf(r.log, "kvtier transfer: no --peer: measuring an embedded loopback peer (pool %s)\n", units.FormatBytes(pool.Size()))
	} else if path == "" {
		path = peer.PathTo(addr)
	}
	c, err := peer.Dial(ctx, addr, peer.DialOptions{Transport: o.Transport, Conns: o.Conns, RDMA: rcfg})
	if err != nil {
		if errors.Is(err, rdma.ErrNoDevice) || errors.Is(err, rdma.ErrNoLibrary) {
			return fmt.Errorf("--transport verbs: %w", err)
		}
		return fmt.Errorf("%w: %w", ErrPeer, err)
	}
	defer c.Close()
	info := c.Info()
	line := o.LineGbps
	if line == 0 && o.Transport == peer.Verbs {
		line = info.RateGbps
	}
	peerName := addr
	if emb != nil {
		peerName = "embedded"
	}
	fmt.Fprintf(r.log, "kvtier transfer: peer %s (%s), pool %s %s, transport %s, device %s, %d conns\n",
		peerName, path, units.FormatBytes(info.PoolBytes), info.Mem, info.Transport, info.Device, o.Conns)
	var mismatch bool
	for _, layout := range o.Layouts {
		for _, size := range o.Sizes {
			if err := ctx.Err(); err != nil {
				return err
			}
			base := r.row(peerName, path, info, layout, size, line)
			list, reason := r.chunks(layout, size, info)
			if reason == "" {
				if avail, err := system.MemAvailable(r.root); err == nil && float64(size) > 0.8*float64(avail) {
					reason = fmt.Sprintf("needs %s, %s available", units.FormatBytes(size), units.FormatBytes(avail))
				}
			}
			if reason != "" {
				row := base
				row.Skip(reason)
				if err := r.sink.Write(row); err != nil {
					return err
				}
				fmt.Fprintf(r.log, "transfer: %-10s %-10s %9s skipped: %s\n", peerName, layout, units.FormatBytes(size), reason)
				continue
			}
			err := r.measure(ctx, c, base, list, size, info.Seed)
			switch {
			case err == nil:
			case errors.Is(err, errMismatch):
				mismatch = true
			default:
				return err
			}
		}
	}
	if mismatch {
		return errMismatch
	}
	return nil
}

// row returns the columns every row of one configuration shares.
func (r *transferRun) row(peerName, path string, info peer.Info, layout string, size int64, lineGbit float64) results.Row {
	row := results.NewRow("transfer")
	row.Backend = "host"
	row.Transport = info.Transport
	row.Tier = "remote"
	row.Layout = layout
	row.Model = r.o.geom.Model
	row.Bytes = size
	switch layout {
	case TransferLayerwise:
		row.ChunkBytes = r.o.geom.ChunkBytes(tiers.Layerwise)
	case TransferBlockwise:
		row.ChunkBytes = r.o.geom.ChunkBytes(tiers.Blockwise)
	default:
		row.ChunkBytes = size
	}
	row.Set("peer", peerName)
	row.Set("path", path)
	row.Set("device", info.Device)
	row.Set("conns", r.o.Conns)
	row.Set("src_mem", info.Mem)
	row.Set("dst_mem", "host")
	if lineGbit > 0 {
		row.Set("line_gbps", lineGbit/8)
	}
	return row
}

// chunks lays size bytes over the peer's pool: for the two pool layouts
// ceil(size/block) blocks at random slots, chunk by chunk (the last one
// cut to the size), packed into the destination; for contiguous one
// read. A reason is returned when the size does not fit the pool.
func (r *transferRun) chunks(layout string, size int64, info peer.Info) ([]peer.Chunk, string) {
	if size > info.PoolBytes {
		return nil, fmt.Sprintf("size exceeds the peer's pool of %s", units.FormatBytes(info.PoolBytes))
	}
	if layout == TransferContiguous {
		return []peer.Chunk{{Src: 0, Dst: 0, Len: size}}, ""
	}
	l := tiers.Layerwise
	if layout == TransferBlockwise {
		l = tiers.Blockwise
	}
	g := r.o.geom
	pool := tiers.Pool{Geometry: g, Layout: l, Slots: int(info.PoolBytes / g.BlockBytes())}
	blocks := int((size + g.BlockBytes() - 1) / g.BlockBytes())
	if blocks > pool.Slots {
		return nil, fmt.Sprintf("%d blocks exceed the peer's pool of %d blocks (%s)", blocks, pool.Slots, units.FormatBytes(info.PoolBytes))
	}
	slots, err := tiers.Placement(r.o.Seed, pool.Slots, blocks)
	if err != nil {
		return nil, err.Error()
	}
	cb := pool.ChunkBytes()
	per := g.ChunksPerBlock(l)
	list := make([]peer.Chunk, 0, int((size+cb-1)/cb))
	var d int64
	for _, s := range slots {
		for c := 0; c < per && d < size; c++ {
			n := min(cb, size-d)
			list = append(list, peer.Chunk{Src: pool.ChunkOffset(s, c), Dst: d, Len: n})
			d += n
		}
	}
	return list, ""
}

// verifyAll is the size up to which every rep is verified; larger sizes
// verify their first measured rep.
const verifyAll = 256 << 20

// measure runs warm-up and reps of one configuration and writes the rows.
func (r *transferRun) measure(ctx context.Context, c *peer.Client, base results.Row, list []peer.Chunk, size int64, seed uint64) error {
	dst, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		row := base
		row.Skip(fmt.Sprintf("destination of %s: %v", units.FormatBytes(size), err))
		return r.sink.Write(row)
	}
	defer syscall.Munmap(dst)
	scrub := func() {
		for i := range dst {
			dst[i] = 0xa5
		}
	}
	scrub() // fault every page in before timing
	label := fmt.Sprintf("%-10s %-10s %9s", base.Get("peer"), base.Layout, units.FormatBytes(size))
	fail := func(rep int, err error) error {
		row := base
		row.Rep = rep
		row.Fail(err)
		if werr := r.sink.Write(row); werr != nil {
			return werr
		}
		fmt.Fprintf(r.log, "transfer: %s error: %v\n", label, err)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %w", ErrPeer, err)
	}
	if err := c.Prepare(dst); err != nil {
		return fail(0, fmt.Errorf("register destination: %w", err))
	}
	for w := 0; w < r.o.Warmup; w++ {
		if err := c.ReadChunks(ctx, dst, list); err != nil {
			return fail(0, fmt.Errorf("warm-up: %w", err))
		}
	}
	var sum float64
	var n int
	var mismatch bool
	for rep := 0; rep < r.o.Reps; rep++ {
		verify := rep == 0 || size <= verifyAll
		if verify {
			scrub()
		}
		sec, err := timeRead(ctx, c, dst, list)
		if err != nil {
			return fail(rep, err)
		}
		row := base
		row.Extra = maps.Clone(base.Extra)
		row.Rep = rep
		row.SetTime(sec)
		if lg := row.Float("line_gbps"); lg > 0 {
			row.Set("line_frac", row.GBps/lg)
		}
		if row.GBps > 0 {
			row.Set("t_3gib_s", 3*float64(1<<30)/(row.GBps*1e9))
			row.Set("t_11_5gib_s", 11.5*float64(1<<30)/(row.GBps*1e9))
		}
		if verify {
			if err := checkChunks(dst, list, seed); err != nil {
				row.Fail(fmt.Errorf("verify: %w", err))
				row.Set("verified", false)
				mismatch = true
			} else {
				row.Set("verified", true)
			}
		}
		if err := r.sink.Write(row); err != nil {
			return err
		}
		if row.Status == results.StatusOK {
			sum += row.GBps
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(r.log, "transfer: %s %8.3f GB/s mean of %d\n", label, sum/float64(n), n)
	}
	if mismatch {
		return errMismatch
	}
	return nil
}

// timeRead times one read of the list with the monotonic clock.
func timeRead(ctx context.Context, c *peer.Client, dst []byte, list []peer.Chunk) (float64, error) {
	start := time.Now()
	if err := c.ReadChunks(ctx, dst, list); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// checkChunks verifies every chunk of dst against the peer's pattern.
func checkChunks(dst []byte, list []peer.Chunk, seed uint64) error {
	for i, ch := range list {
		if err := pattern.Check(dst[ch.Dst:ch.Dst+ch.Len], seed, ch.Src); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
	}
	return nil
}
