package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kvtier/kvtier/cuda"
	"github.com/kvtier/kvtier/kv"
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

// Destinations of a transfer (TransferOptions.DstMem, the dst_mem column).
const (
	DstHost = "host"
	DstGPU  = "gpu"
)

// PathPeerCopy is the path of GPU-to-GPU peer copy rows.
const PathPeerCopy = "peercopy"

// GPU landing paths, appended to the path column of dst_mem=gpu rows
// after a "+": "loopback+bounce", "inter+gpudirect".
const (
	GPUDirect = "gpudirect" // RDMA READ straight into device memory
	Bounce    = "bounce"    // into pinned host memory, then one H2D copy
)

// transferExtraColumns follow results.TransferColumns in transfer.csv.
var transferExtraColumns = []string{
	"gpu", // the destination GPU (dst_mem=gpu), or both GPUs of a peer copy
}

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

	// DstMem is where reads land: host (default) or gpu (device memory
	// of GPU through Backend: GPUDirect on verbs when the memory
	// registers, else a pinned bounce buffer and an H2D copy, timed
	// together).
	DstMem string
	GPU    int
	// Backend is the cuda backend for DstMem gpu; nil opens device GPU
	// and closes it at the end.
	Backend tiers.Backend
	// PeerCopy, when set, is {SRC, DST}: GPU ordinals between which each
	// size and layout is also copied with cuMemcpyPeerAsync, timed with
	// CUDA events, as rows with path peercopy. Without two GPUs or a
	// driver these rows are skipped with the reason.
	PeerCopy []int
	// Libs names the native libraries to load.
	Libs system.Libraries
	// Faults are the test-only faults the client injects (peer.Faults).
	Faults peer.Faults

	geom kv.Geometry
}

// DefaultTransferOptions are the options of a plain kvtier transfer.
func DefaultTransferOptions() TransferOptions {
	return TransferOptions{
		Sizes: DefaultTransferSizes(), Reps: 5, Warmup: 1,
		Layouts: []string{TransferLayerwise, TransferBlockwise, TransferContiguous},
		Model:   kv.DefaultModel, BlockTokens: kv.DefaultBlockTokens,
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
	switch o.DstMem {
	case "", DstHost, DstGPU:
	default:
		errs = append(errs, fmt.Errorf("--dst-mem %q: want host or gpu", o.DstMem))
	}
	if o.GPU < 0 {
		errs = append(errs, fmt.Errorf("--gpu %d: want a device ordinal", o.GPU))
	}
	if o.PeerCopy != nil {
		if len(o.PeerCopy) != 2 || o.PeerCopy[0] < 0 || o.PeerCopy[1] < 0 || o.PeerCopy[0] == o.PeerCopy[1] {
			errs = append(errs, fmt.Errorf("--peer-copy %v: want SRC,DST: two different GPU ordinals", o.PeerCopy))
		}
	}
	if o.GIDIndex < -1 {
		errs = append(errs, fmt.Errorf("--gid-index %d: want -1 (automatic) or an index", o.GIDIndex))
	}
	for _, p := range o.Peers {
		if !strings.Contains(p, ":") {
			errs = append(errs, fmt.Errorf("--peer %q: want HOST:PORT", p))
		}
	}
	g, err := kv.LookupModel(o.Model)
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
	gpu  tiers.Backend // DstMem gpu

	noGPUDirect bool // said once that GPUDirect is unavailable
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
		if names, err := rdma.DeviceNames(o.Libs.IBVerbs); err != nil || len(names) == 0 {
			if err == nil {
				err = rdma.ErrNoDevice
			}
			return fmt.Errorf("--transport verbs: no RDMA device (%w)", err)
		}
	}
	if o.DstMem == DstGPU {
		if o.Backend == nil {
			b, _, err := tiers.OpenBackend(ctx, "cuda", tiers.BackendConfig{GPU: o.GPU, NUMA: -1, Log: log, Libs: o.Libs})
			if err != nil {
				return fmt.Errorf("--dst-mem gpu: %w", err)
			}
			defer b.Close()
			o.Backend = b
		}
		if o.Backend.Name() != "cuda" {
			return fmt.Errorf("--dst-mem gpu: backend %s has no GPU memory", o.Backend.Name())
		}
		r.gpu = o.Backend
	}
	sink, err := out.CSV(results.TransferFile, TransferSummaryKeys, append(slices.Clone(results.TransferColumns), transferExtraColumns...)...)
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
	if o.PeerCopy != nil {
		if err := r.peerCopy(ctx); err != nil {
			if !errors.Is(err, errMismatch) {
				return err
			}
			failed = true
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
		"dst_mem": r.dstMem(), "gpu": fmt.Sprint(o.GPU), "peer_copy": strings.Trim(strings.Join(strings.Fields(fmt.Sprint(o.PeerCopy)), ","), "[]"),
	}
}

var errMismatch = errors.New("data mismatch")

func (r *transferRun) dstMem() string {
	if r.o.DstMem == DstGPU {
		return DstGPU
	}
	return DstHost
}

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
	rcfg := rdma.Config{Device: o.RDMADevice, GIDIndex: o.GIDIndex, Root: r.root, Library: o.Libs.IBVerbs}
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
	c, err := peer.Dial(ctx, addr, peer.DialOptions{Transport: o.Transport, Conns: o.Conns, RDMA: rcfg, Faults: o.Faults})
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
		row.ChunkBytes = r.o.geom.ChunkBytes(kv.Layerwise)
	case TransferBlockwise:
		row.ChunkBytes = r.o.geom.ChunkBytes(kv.Blockwise)
	default:
		row.ChunkBytes = size
	}
	row.Set("peer", peerName)
	row.Set("path", path)
	row.Set("device", info.Device)
	row.Set("conns", r.o.Conns)
	row.Set("src_mem", info.Mem)
	row.Set("dst_mem", r.dstMem())
	if r.gpu != nil {
		row.Backend = r.gpu.Name()
		row.Set("gpu", r.gpu.Device())
	}
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
	l := kv.Layerwise
	if layout == TransferBlockwise {
		l = kv.Blockwise
	}
	g := r.o.geom
	pool := kv.Pool{Geometry: g, Layout: l, Slots: int(info.PoolBytes / g.BlockBytes())}
	blocks := int((size + g.BlockBytes() - 1) / g.BlockBytes())
	if blocks > pool.Slots {
		return nil, fmt.Sprintf("%d blocks exceed the peer's pool of %d blocks (%s)", blocks, pool.Slots, units.FormatBytes(info.PoolBytes))
	}
	slots, err := kv.Placement(r.o.Seed, pool.Slots, blocks)
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

// A transferDst is where one configuration's reads land: host memory, or
// GPU memory by GPUDirect or through a pinned bounce buffer.
type transferDst struct {
	host    []byte       // host destination, or the bounce buffer
	dev     tiers.Buffer // GPU destination
	bounce  tiers.Buffer
	path    string // "", GPUDirect or Bounce
	scratch []byte // GPU destination read back for verification
	unmap   [][]byte
}

func (d *transferDst) close() {
	for _, b := range []tiers.Buffer{d.dev, d.bounce} {
		if b != nil {
			b.Close()
		}
	}
	for _, m := range d.unmap {
		syscall.Munmap(m)
	}
}

// mapHost maps n bytes of anonymous memory and faults every page in.
func (d *transferDst) mapHost(n int64) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	d.unmap = append(d.unmap, b)
	fillBytes(b, 0xa5)
	return b, nil
}

func fillBytes(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// newDst allocates the destination of size bytes. A non-empty reason
// means the configuration cannot run here (a skipped row).
func (r *transferRun) newDst(ctx context.Context, c *peer.Client, list []peer.Chunk, size int64) (*transferDst, string, error) {
	d := &transferDst{}
	if r.gpu == nil {
		h, err := d.mapHost(size)
		if err != nil {
			return nil, fmt.Sprintf("destination of %s: %v", units.FormatBytes(size), err), nil
		}
		d.host = h
		return d, "", c.Prepare(d.host)
	}
	fail := func(what string, err error) (*transferDst, string, error) {
		d.close()
		return nil, fmt.Sprintf("%s of %s: %v", what, units.FormatBytes(size), err), nil
	}
	var err error
	if d.dev, err = r.gpu.Alloc(tiers.Device, size); err != nil {
		return fail("GPU destination", err)
	}
	if d.scratch, err = d.mapHost(size); err != nil {
		return fail("read-back buffer", err)
	}
	d.path = Bounce
	if r.o.Transport == peer.Verbs {
		// GPUDirect when the device memory registers: try one chunk.
		if err := c.ReadToDevice(ctx, d.deviceMem(r.gpu), list[:1]); err == nil {
			d.path = GPUDirect
		} else if !r.noGPUDirect {
			r.noGPUDirect = true
			fmt.Fprintf(r.log, "kvtier transfer: GPUDirect unavailable, using a pinned bounce buffer: %v\n", err)
		}
	}
	if d.path == Bounce {
		if d.bounce, err = r.gpu.Alloc(tiers.Pinned, size); err != nil {
			return fail("pinned bounce buffer", err)
		}
		d.host = d.bounce.Host()
		fillBytes(d.host, 0xa5)
		if err := c.Prepare(d.host); err != nil {
			d.close()
			return nil, "", err
		}
	}
	return d, "", nil
}

func (d *transferDst) deviceMem(b tiers.Backend) peer.DeviceMem {
	m := peer.DeviceMem{Addr: d.dev.Addr(), Size: d.dev.Size()}
	if exp, ok := b.(tiers.DMABufExporter); ok {
		m.Export = func() (int, int64, error) { return exp.ExportDMABuf(d.dev) }
	}
	return m
}

// read brings list into the destination: into host memory, or all the
// way into GPU memory (the H2D copy of the bounce path synchronised).
func (r *transferRun) read(ctx context.Context, c *peer.Client, d *transferDst, list []peer.Chunk) error {
	switch d.path {
	case GPUDirect:
		return c.ReadToDevice(ctx, d.deviceMem(r.gpu), list)
	case Bounce:
		if err := c.ReadChunks(ctx, d.host, list); err != nil {
			return err
		}
		// Chunks land packed from offset 0: one H2D copy of the span.
		n := d.dev.Size()
		if err := r.gpu.Copy(d.dev, d.bounce, []kv.Copy{{Dst: 0, Src: 0, Bytes: n}}, tiers.PerCopy); err != nil {
			return fmt.Errorf("H2D: %w", err)
		}
		if err := r.gpu.Sync(); err != nil {
			return fmt.Errorf("H2D: %w", err)
		}
		return nil
	}
	return c.ReadChunks(ctx, d.host, list)
}

// scrub overwrites the destination (and the bounce buffer) so a check
// sees only what the next read brought.
func (d *transferDst) scrub() error {
	if d.host != nil {
		fillBytes(d.host, 0xa5)
	}
	if d.dev != nil {
		fillBytes(d.scratch, 0x5a)
		if _, err := d.dev.WriteAt(d.scratch, 0); err != nil {
			return fmt.Errorf("scrub GPU destination: %w", err)
		}
	}
	return nil
}

// check verifies the destination against the peer's pattern, reading
// GPU memory back first.
func (d *transferDst) check(list []peer.Chunk, seed uint64) error {
	if d.dev == nil {
		return checkChunks(d.host, list, seed)
	}
	if _, err := d.dev.ReadAt(d.scratch, 0); err != nil {
		return fmt.Errorf("read back GPU destination: %w", err)
	}
	return checkChunks(d.scratch, list, seed)
}

// measure runs warm-up and reps of one configuration and writes the rows.
func (r *transferRun) measure(ctx context.Context, c *peer.Client, base results.Row, list []peer.Chunk, size int64, seed uint64) error {
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
	dst, reason, err := r.newDst(ctx, c, list, size)
	if err != nil {
		return fail(0, fmt.Errorf("register destination: %w", err))
	}
	if reason != "" {
		row := base
		row.Skip(reason)
		fmt.Fprintf(r.log, "transfer: %s skipped: %s\n", label, reason)
		return r.sink.Write(row)
	}
	defer dst.close()
	if dst.path != "" {
		base.Extra = maps.Clone(base.Extra)
		base.Set("path", base.Get("path")+"+"+dst.path)
	}
	for w := 0; w < r.o.Warmup; w++ {
		if err := r.read(ctx, c, dst, list); err != nil {
			return fail(0, fmt.Errorf("warm-up: %w", err))
		}
	}
	var t repTally
	for rep := 0; rep < r.o.Reps; rep++ {
		verify := rep == 0 || size <= verifyAll
		if verify {
			if err := dst.scrub(); err != nil {
				return fail(rep, err)
			}
		}
		start := time.Now()
		if err := r.read(ctx, c, dst, list); err != nil {
			return fail(rep, err)
		}
		var check func() error
		if verify {
			check = func() error { return dst.check(list, seed) }
		}
		if err := r.record(&t, base, rep, time.Since(start).Seconds(), check); err != nil {
			return err
		}
	}
	return t.finish(r.log, label)
}

// A repTally sums the ok reps of one configuration for its progress line
// and remembers whether any rep failed verification.
type repTally struct {
	sum      float64
	n        int
	mismatch bool
}

// record writes the row of one timed rep: base with the rep's time and
// derived columns, verified by check when check is not nil (a failed
// check makes it an error row).
func (r *transferRun) record(t *repTally, base results.Row, rep int, sec float64, check func() error) error {
	row := base
	row.Extra = maps.Clone(base.Extra)
	row.Rep = rep
	row.SetTime(sec)
	r.derive(&row)
	if check != nil {
		if err := check(); err != nil {
			row.Fail(fmt.Errorf("verify: %w", err))
			row.Set("verified", false)
			t.mismatch = true
		} else {
			row.Set("verified", true)
		}
	}
	if err := r.sink.Write(row); err != nil {
		return err
	}
	if row.Status == results.StatusOK {
		t.sum += row.GBps
		t.n++
	}
	return nil
}

// finish prints the configuration's progress line and returns errMismatch
// when a rep failed verification.
func (t *repTally) finish(log io.Writer, label string) error {
	if t.n > 0 {
		fmt.Fprintf(log, "transfer: %s %8.3f GB/s mean of %d\n", label, t.sum/float64(t.n), t.n)
	}
	if t.mismatch {
		return errMismatch
	}
	return nil
}

// derive sets the columns computed from a rep's rate.
func (r *transferRun) derive(row *results.Row) {
	if lg := row.Float("line_gbps"); lg > 0 {
		row.Set("line_frac", row.GBps/lg)
	}
	if row.GBps > 0 {
		row.Set("t_3gib_s", 3*float64(1<<30)/(row.GBps*1e9))
		row.Set("t_11_5gib_s", 11.5*float64(1<<30)/(row.GBps*1e9))
	}
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

// peerCopyRow returns the columns every peer-copy row of one layout and
// size shares.
func (r *transferRun) peerCopyRow(layout string, size int64, device, gpus string) results.Row {
	row := r.row("local", PathPeerCopy, peer.Info{Transport: "cuda", Device: device, Mem: DstGPU}, layout, size, 0)
	row.Backend = "cuda"
	row.Set("conns", 1)
	row.Set("dst_mem", DstGPU)
	row.Set("gpu", gpus)
	return row
}

// peerCopy copies each size and layout from a pattern-filled pool on GPU
// PeerCopy[0] to GPU PeerCopy[1] with cuMemcpyPeerAsync, timed with CUDA
// events on a stream of the source. Rows: peer "local", path peercopy,
// transport cuda, device "GPU0->GPU1 (P2P)" when cuDeviceCanAccessPeer
// said yes and access was enabled, else "(staged through host)". Where it cannot run every row is
// skipped with the reason and the run goes on.
func (r *transferRun) peerCopy(ctx context.Context) error {
	o := r.o
	src, dst := o.PeerCopy[0], o.PeerCopy[1]
	name := fmt.Sprintf("GPU%d->GPU%d", src, dst)
	skipAll := func(reason string) error {
		for _, layout := range o.Layouts {
			for _, size := range o.Sizes {
				row := r.peerCopyRow(layout, size, name, "")
				row.Skip(reason)
				if err := r.sink.Write(row); err != nil {
					return err
				}
			}
		}
		fmt.Fprintf(r.log, "transfer: peer copy %s skipped: %s\n", name, reason)
		return nil
	}
	pc, reason := openPeerCopy(o.Libs.CUDA, src, dst, o.Sizes, o.geom.BlockBytes(), o.Seed^0x7065657270)
	if reason != "" {
		return skipAll(reason)
	}
	defer pc.close()
	device := name + " (" + pc.link + ")"
	fmt.Fprintf(r.log, "kvtier transfer: peer copy %s (%s), pool %s on GPU%d\n", name, pc.link, units.FormatBytes(pc.pool.Size()), src)
	info := peer.Info{PoolBytes: pc.pool.Size()}
	var mismatch bool
	for _, layout := range o.Layouts {
		for _, size := range o.Sizes {
			if err := ctx.Err(); err != nil {
				return err
			}
			base := r.peerCopyRow(layout, size, device, pc.gpus)
			list, reason := r.chunks(layout, size, info)
			if reason == "" {
				if free, _, err := pc.dctx.MemInfo(); err == nil && size > free*9/10 {
					reason = fmt.Sprintf("needs %s on GPU%d, %s free", units.FormatBytes(size), dst, units.FormatBytes(free))
				} else if avail, err := system.MemAvailable(r.root); err == nil && float64(size) > 0.8*float64(avail) {
					reason = fmt.Sprintf("read-back needs %s, %s available", units.FormatBytes(size), units.FormatBytes(avail))
				}
			}
			if reason != "" {
				row := base
				row.Skip(reason)
				if err := r.sink.Write(row); err != nil {
					return err
				}
				fmt.Fprintf(r.log, "transfer: %-10s %-10s %9s skipped: %s\n", name, layout, units.FormatBytes(size), reason)
				continue
			}
			err := r.measurePeerCopy(pc, base, list, size)
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

// A peerCopier holds the two contexts, the source pool and the timing
// stream and events of a peer copy.
type peerCopier struct {
	drv         *cuda.Driver
	sctx, dctx  *cuda.Context
	pool        *cuda.DeviceMem
	stream      *cuda.Stream
	start, stop *cuda.Event
	link        string // "P2P" or "staged through host"
	gpus        string
	seed        uint64
}

// openPeerCopy sets up a peer copy from GPU src to GPU dst with a source
// pool that fits the largest size over whole blocks, filled with the
// pattern. A non-empty reason says why it cannot run.
func openPeerCopy(libcuda string, src, dst int, sizes []int64, blockBytes int64, seed uint64) (*peerCopier, string) {
	drv, err := cuda.Open(libcuda)
	if err != nil {
		return nil, "peer copy needs two GPUs; " + err.Error()
	}
	pc := &peerCopier{drv: drv, seed: seed}
	why := func(format string, a ...any) (*peerCopier, string) {
		pc.close()
		return nil, fmt.Sprintf(format, a...)
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return why("peer copy: %v", err)
	}
	if n < 2 || src >= n || dst >= n {
		return why("peer copy needs two GPUs; the driver sees %d, asked for GPU%d and GPU%d", n, src, dst)
	}
	can, err := drv.CanAccessPeer(src, dst)
	if err != nil {
		return why("peer copy: %v", err)
	}
	if pc.sctx, err = drv.PrimaryContext(src); err != nil {
		return why("peer copy: %v", err)
	}
	if pc.dctx, err = drv.PrimaryContext(dst); err != nil {
		return why("peer copy: %v", err)
	}
	pc.link = "staged through host"
	if can {
		// Both ways: the copy runs on the source's stream.
		err1 := pc.sctx.EnablePeerAccess(pc.dctx)
		err2 := pc.dctx.EnablePeerAccess(pc.sctx)
		if err1 == nil && err2 == nil {
			pc.link = "P2P"
		}
	}
	var names []string
	for _, d := range []int{src, dst} {
		if info, err := drv.Device(d); err == nil {
			names = append(names, fmt.Sprintf("%s [%s]", info.Name, info.BusID))
		}
	}
	pc.gpus = strings.Join(names, " -> ")
	var want int64
	for _, s := range sizes {
		want = max(want, s+s/4)
	}
	want = (want + blockBytes - 1) / blockBytes * blockBytes
	if free, _, err := pc.sctx.MemInfo(); err == nil && want > free*9/10 {
		want = max(blockBytes, free*9/10/blockBytes*blockBytes)
	}
	if pc.pool, err = pc.sctx.AllocDevice(want); err != nil {
		return why("peer copy: source pool: %v", err)
	}
	buf := make([]byte, min(want, 64<<20))
	for off := int64(0); off < want; off += int64(len(buf)) {
		b := buf[:min(int64(len(buf)), want-off)]
		pattern.Fill(b, seed, off)
		if _, err := pc.pool.WriteAt(b, off); err != nil {
			return why("peer copy: fill source pool: %v", err)
		}
	}
	if pc.stream, err = pc.sctx.NewStream(); err != nil {
		return why("peer copy: %v", err)
	}
	if pc.start, err = pc.sctx.NewEvent(); err != nil {
		return why("peer copy: %v", err)
	}
	if pc.stop, err = pc.sctx.NewEvent(); err != nil {
		return why("peer copy: %v", err)
	}
	return pc, ""
}

func (pc *peerCopier) close() {
	for _, ev := range []*cuda.Event{pc.start, pc.stop} {
		if ev != nil {
			ev.Destroy()
		}
	}
	if pc.stream != nil {
		pc.stream.Destroy()
	}
	if pc.pool != nil {
		pc.pool.Free()
	}
	for _, c := range []*cuda.Context{pc.sctx, pc.dctx} {
		if c != nil {
			c.Release()
		}
	}
	pc.drv.Close()
}

// copyOnce queues the plan between the two events and returns the
// seconds between them.
func (pc *peerCopier) copyOnce(p *cuda.Plan) (float64, error) {
	if err := pc.start.Record(pc.stream); err != nil {
		return 0, err
	}
	if _, err := pc.stream.CopyPeer(pc.dctx, pc.sctx, p); err != nil {
		pc.stream.Sync()
		return 0, err
	}
	if err := pc.stop.Record(pc.stream); err != nil {
		return 0, err
	}
	return cuda.Elapsed(pc.start, pc.stop)
}

// measurePeerCopy runs warm-up and reps of one peer-copy configuration.
func (r *transferRun) measurePeerCopy(pc *peerCopier, base results.Row, list []peer.Chunk, size int64) error {
	label := fmt.Sprintf("%-10s %-10s %9s", "peercopy", base.Layout, units.FormatBytes(size))
	errRow := func(rep int, err error) error {
		row := base
		row.Rep = rep
		row.Fail(err)
		fmt.Fprintf(r.log, "transfer: %s error: %v\n", label, err)
		if werr := r.sink.Write(row); werr != nil {
			return werr
		}
		return errMismatch // a failed measurement; the run goes on
	}
	dst, err := pc.dctx.AllocDevice(size)
	if err != nil {
		row := base
		row.Skip(fmt.Sprintf("destination of %s on GPU%d: %v", units.FormatBytes(size), r.o.PeerCopy[1], err))
		return r.sink.Write(row)
	}
	defer dst.Free()
	scratch := make([]byte, size)
	var p cuda.Plan
	defer p.Free()
	p.Reset(len(list))
	for _, c := range list {
		p.Add(dst.Ptr()+uint64(c.Dst), pc.pool.Ptr()+uint64(c.Src), c.Len)
	}
	for w := 0; w < r.o.Warmup; w++ {
		if _, err := pc.copyOnce(&p); err != nil {
			return errRow(0, fmt.Errorf("warm-up: %w", err))
		}
	}
	var t repTally
	for rep := 0; rep < r.o.Reps; rep++ {
		verify := rep == 0 || size <= verifyAll
		if verify {
			fillBytes(scratch, 0x5a)
			if _, err := dst.WriteAt(scratch, 0); err != nil {
				return errRow(rep, fmt.Errorf("scrub: %w", err))
			}
		}
		sec, err := pc.copyOnce(&p)
		if err != nil {
			return errRow(rep, err)
		}
		var check func() error
		if verify {
			check = func() error {
				if _, err := dst.ReadAt(scratch, 0); err != nil {
					return fmt.Errorf("read back: %w", err)
				}
				return checkChunks(scratch, list, pc.seed)
			}
		}
		if err := r.record(&t, base, rep, sec, check); err != nil {
			return err
		}
	}
	return t.finish(r.log, label)
}
