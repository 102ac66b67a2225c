package rdma

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kvtier/kvtier/csrc/ibvwrap"
	"github.com/kvtier/kvtier/internal/native"
)

// libs holds every load by the path asked for, failures included.
var libs native.Cache[*ibvwrap.Lib]

// load returns libibverbs at path ("" = libibverbs.so.1, then
// libibverbs.so), loaded once per path for the life of the process.
func load(path string) (*ibvwrap.Lib, error) {
	return libs.Load(path, func(path string) (*ibvwrap.Lib, error) {
		l, st := ibvwrap.Load(path)
		return l, toError("load libibverbs", st, nil)
	})
}

// Load loads libibverbs from lib, or where lib is "" from libibverbs.so.1,
// then libibverbs.so, once per path for the life of the process.
func Load(lib string) error {
	_, err := load(lib)
	return err
}

// DeviceNames lists the devices libibverbs (loaded from lib) sees.
func DeviceNames(lib string) ([]string, error) {
	l, err := load(lib)
	if err != nil {
		return nil, err
	}
	names, st := l.Devices()
	if err := toError("list devices", st, nil); err != nil {
		return nil, err
	}
	return names, nil
}

// HasDMABuf reports whether libibverbs loaded from lib has
// ibv_reg_dmabuf_mr.
func HasDMABuf(lib string) bool {
	l, err := load(lib)
	return err == nil && l.HasDMABuf()
}

// An Endpoint is one device context with a PD, a CQ and a set of RC QPs.
// Its methods are not safe for concurrent use, except Close.
type Endpoint struct {
	mu      sync.Mutex
	ep      *ibvwrap.Endpoint
	info    QPInfo
	rdAtom  int
	maxMsg  uint32
	mrs     []*MR
	timeout time.Duration
	// broken is the read failure after which the QPs are in the error
	// state and the CQ may hold stale completions: no further reads.
	broken error
	// undrained says an aborted read left requests in flight: the memory
	// registrations and QPs are never released.
	undrained bool
}

// An MR is a registered memory region.
type MR struct {
	Addr       uint64
	Len        int64
	LKey, RKey uint32
	h          ibvwrap.MR
}

// Open opens an endpoint as cfg says and selects its GID.
func Open(cfg Config) (*Endpoint, error) {
	if cfg.QPs < 1 {
		cfg.QPs = 1
	}
	if cfg.Root == "" {
		cfg.Root = "/"
	}
	l, err := load(cfg.Library)
	if err != nil {
		return nil, err
	}
	const sqDepth = 64
	ep, attr, st := l.Open(cfg.Device, cfg.Port, cfg.QPs, sqDepth)
	if err := toError("open device", st, nil); err != nil {
		return nil, err
	}
	e := &Endpoint{ep: ep, rdAtom: RdAtom(attr.MaxQPRdAtom), maxMsg: attr.MaxMsgSize, timeout: 30 * time.Second}
	gi, gid, err := e.selectGID(cfg, attr)
	if err != nil {
		e.Close()
		return nil, err
	}
	psns := make([]uint32, cfg.QPs)
	var rnd [4]byte
	for i := range psns {
		rand.Read(rnd[:])
		psns[i] = binary.LittleEndian.Uint32(rnd[:]) & 0xffffff
	}
	e.info = QPInfo{
		Device: attr.Device, Port: attr.Port, LID: attr.LID, GID: FormatGID(gid), GIDIndex: gi,
		MTU: MTUBytes(attr.ActiveMTU), QPNs: attr.QPNs, PSNs: psns, RdAtom: e.rdAtom,
	}
	if r, err := PortRate(cfg.Root, attr.Device, attr.Port); err == nil {
		e.info.RateGbps = r
	}
	return e, nil
}

// selectGID picks the endpoint's GID index (-1 on InfiniBand, which
// needs none) from the port's table in sysfs, or the device's own table
// where sysfs has none, and reads the GID.
func (e *Endpoint) selectGID(cfg Config, attr ibvwrap.EndpointAttr) (int, [16]byte, error) {
	var gid [16]byte
	where := fmt.Sprintf("%s port %d", attr.Device, attr.Port)
	ll := "InfiniBand"
	if attr.LinkLayer == 2 {
		ll = "Ethernet"
	}
	table, terr := ReadGIDTable(cfg.Root, attr.Device, attr.Port)
	if terr != nil || len(table) == 0 {
		// No sysfs view: ask the device for its table, types unknown.
		table = e.queryGIDs(attr.GIDTableLen)
	}
	// A requested index must exist in the port's table as the device
	// sizes it, whatever sysfs shows.
	if cfg.GIDIndex >= attr.GIDTableLen {
		return 0, gid, fmt.Errorf("rdma: GID index %d does not exist on %s (table of %d entries)", cfg.GIDIndex, where, attr.GIDTableLen)
	}
	gi, err := SelectGID(table, cfg.GIDIndex, ll, where)
	if err != nil && cfg.GIDIndex < 0 && terr != nil {
		// Types unreadable: take the first non-link-local address.
		gi, err = firstRoutable(table, where)
	}
	if err != nil || gi < 0 {
		return gi, gid, err
	}
	if gid, err = e.gid(gi); err != nil {
		return 0, gid, err
	}
	if gid == [16]byte{} {
		return 0, gid, fmt.Errorf("rdma: GID index %d on %s is empty", gi, where)
	}
	return gi, gid, nil
}

func firstRoutable(table []GIDEntry, where string) (int, error) {
	for _, t := range table {
		if !t.Zero() && !t.linkLocal() {
			return t.Index, nil
		}
	}
	return 0, fmt.Errorf("rdma: no routable GID on %s (give --gid-index)", where)
}

func (e *Endpoint) gid(i int) ([16]byte, error) {
	g, st := e.ep.GID(i)
	return g, toError(fmt.Sprintf("query GID %d", i), st, nil)
}

func (e *Endpoint) queryGIDs(n int) []GIDEntry {
	var out []GIDEntry
	for i := 0; i < n && i < 256; i++ {
		g, err := e.gid(i)
		if err != nil {
			break
		}
		out = append(out, GIDEntry{Index: i, GID: FormatGID(g)})
	}
	return out
}

// Info is this endpoint as the remote side needs it.
func (e *Endpoint) Info() QPInfo { return e.info }

// SetTimeout bounds how long a read waits without any completion.
func (e *Endpoint) SetTimeout(d time.Duration) { e.timeout = d }

// Connect moves every QP to RTS against the remote endpoint r: path MTU
// the smaller active MTU, reads in flight the smaller of both limits.
func (e *Endpoint) Connect(r QPInfo) error {
	n := len(e.info.QPNs)
	if len(r.QPNs) != n || len(r.PSNs) != n {
		return fmt.Errorf("rdma: connect: remote has %d QPs, this side %d", len(r.QPNs), n)
	}
	mtu := IBMTU(min(e.info.MTU, r.MTU))
	if mtu == 0 {
		return fmt.Errorf("rdma: connect: no common MTU (%d, %d)", e.info.MTU, r.MTU)
	}
	rgid, err := ParseGID(r.GID)
	if err != nil {
		return err
	}
	if r.RdAtom > 0 {
		e.rdAtom = min(e.rdAtom, r.RdAtom)
	}
	st := e.ep.Connect(e.info.GIDIndex, mtu, e.rdAtom, e.info.PSNs, ibvwrap.Remote{LID: r.LID, GID: rgid, QPNs: r.QPNs, PSNs: r.PSNs})
	return toError("connect", st, nil)
}

// Reg registers n bytes of memory at addr (host memory, or device memory
// where nvidia-peermem is loaded). The caller keeps the memory alive and
// unmoved until the endpoint is closed.
func (e *Endpoint) Reg(addr uintptr, n int64) (*MR, error) {
	h, st := e.ep.Reg(uint64(addr), n)
	if err := toError("reg mr", st, nil); err != nil {
		return nil, err
	}
	mr := &MR{Addr: uint64(addr), Len: n, LKey: h.LKey, RKey: h.RKey, h: h}
	e.mrs = append(e.mrs, mr)
	return mr, nil
}

// RegDMABuf registers n bytes at offset of a DMA-BUF fd whose memory is
// addressed as iova (the device pointer): GPUDirect RDMA without
// nvidia-peermem.
func (e *Endpoint) RegDMABuf(fd int, offset int64, iova uint64, n int64) (*MR, error) {
	h, st := e.ep.RegDMABuf(fd, offset, iova, n)
	if err := toError("reg dmabuf mr", st, nil); err != nil {
		return nil, err
	}
	mr := &MR{Addr: iova, Len: n, LKey: h.LKey, RKey: h.RKey, h: h}
	e.mrs = append(e.mrs, mr)
	return mr, nil
}

// readSlice is how long one cgo call polls before Go looks at ctx again;
// drainTimeout bounds the wait for flushed completions after an abort.
const (
	readSlice    = 100 * time.Millisecond
	drainTimeout = 5 * time.Second
)

// Read performs the reads, split and spread over the endpoint's QPs with
// up to RdAtom in flight per QP, in batches. The shim polls in slices of
// about 100 ms (one cgo call each) and ctx is checked between them: when
// ctx is done, or a read fails, with requests still in flight, the QPs are
// moved to the error state and the flushed completions drained before
// Read returns, so no request writes into memory the caller then reuses
// or frees. A cancelled read returns an error wrapping context.Cause(ctx).
// After any failure the endpoint refuses further reads. The endpoint's
// timeout (SetTimeout) bounds the wait without any completion.
func (e *Endpoint) Read(ctx context.Context, reads []WR) error {
	maxLen := uint32(MaxWR)
	if e.maxMsg > 0 {
		maxLen = min(maxLen, e.maxMsg)
	}
	if e.broken != nil {
		return fmt.Errorf("rdma: read: endpoint unusable after an earlier failure (%v)", e.broken)
	}
	wrs, qstart := Plan(reads, len(e.info.QPNs), maxLen)
	bs, starts := Batches(wrs, qstart, 4096)
	for i, b := range bs {
		if ctx.Err() != nil {
			// Nothing in flight between batches: the endpoint stays usable.
			return fmt.Errorf("rdma: read aborted: %w", context.Cause(ctx))
		}
		if err := e.readBatch(ctx, b, starts[i]); err != nil {
			e.broken = err
			return err
		}
	}
	return nil
}

// readBatch runs one batch to completion, slice by slice.
func (e *Endpoint) readBatch(ctx context.Context, b []WR, starts []int) error {
	ws := make([]ibvwrap.WR, len(b))
	for j, w := range b {
		ws[j] = ibvwrap.WR(w)
	}
	rd, st := e.ep.StartRead(ws, starts, e.rdAtom)
	if err := toError("read", st, nil); err != nil {
		return err
	}
	defer rd.Free()
	slice, timeout := int(readSlice.Milliseconds()), int(e.timeout.Milliseconds())
	for {
		st := rd.Poll(slice, timeout)
		var err error
		switch st.Code {
		case ibvwrap.CodeOK:
			return nil
		case ibvwrap.CodeAgain:
			if ctx.Err() == nil {
				continue
			}
			err = fmt.Errorf("rdma: read aborted: %w", context.Cause(ctx))
		default:
			err = toError("read", st, b)
		}
		return e.abort(rd, err)
	}
}

// abort moves the QPs to the error state and drains what was in flight;
// cause is the error the read returns. If the flushed completions do not
// all come, the endpoint keeps its memory registrations and resources
// for good (Close and Dereg leave them), as the device may still write.
func (e *Endpoint) abort(rd *ibvwrap.Read, cause error) error {
	_, st := rd.Abort(int(drainTimeout.Milliseconds()))
	if err := toError("abort read", st, nil); err != nil {
		if errors.Is(err, ErrTimeout) {
			e.undrained = true
		}
		return fmt.Errorf("%w (then %v)", cause, err)
	}
	return cause
}

// Close deregisters the MRs and tears the endpoint down in reverse order.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ep == nil {
		return nil
	}
	if e.undrained {
		e.ep, e.mrs = nil, nil
		return errors.New("rdma: close: reads still in flight after an abort; the endpoint and its memory registrations are left in place")
	}
	var first error
	for _, mr := range slices.Backward(e.mrs) {
		if err := toError("dereg mr", e.ep.Dereg(mr.h), nil); err != nil && first == nil {
			first = err
		}
	}
	e.mrs = nil
	e.ep.Close()
	e.ep = nil
	return first
}

// Dereg deregisters one MR before the endpoint closes.
func (e *Endpoint) Dereg(mr *MR) error {
	if e.undrained {
		return errors.New("rdma: dereg mr: reads still in flight after an abort; the registration is left in place")
	}
	for i, m := range e.mrs {
		if m == mr {
			e.mrs = append(e.mrs[:i], e.mrs[i+1:]...)
			return toError("dereg mr", e.ep.Dereg(mr.h), nil)
		}
	}
	return nil
}
