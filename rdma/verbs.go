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
	mu   sync.Mutex
	ep   *ibvwrap.Endpoint
	info QPInfo
	// rdAtom is the reads in flight per QP this side issues (the device's
	// initiator limit, then also the peer's responder limit once
	// connected); destRdAtom the reads per QP it answers.
	rdAtom, destRdAtom int
	tc, sl             int
	regFlags           ibvwrap.RegFlag // what every registration adds (remote write)
	maxMsg             uint32
	mrs                []*MR
	timeout            time.Duration
	// broken is the read failure after which the QPs are in the error
	// state and the CQ may hold stale completions: no further reads.
	broken error
	// undrained says an aborted read left requests in flight: the memory
	// registrations and QPs are never released.
	undrained bool
	warnings  []string
}

// Warnings says what about the endpoint's configuration will not apply
// as asked (a service level above 7 on RoCE).
func (e *Endpoint) Warnings() []string { return e.warnings }

// An MR is a registered memory region.
type MR struct {
	Addr       uint64
	Len        int64
	LKey, RKey uint32
	h          ibvwrap.MR
}

// Open opens an endpoint as cfg says and selects its GIDs.
func Open(cfg Config) (*Endpoint, error) {
	if cfg.QPs < 1 {
		cfg.QPs = 1
	}
	if cfg.Root == "" {
		cfg.Root = "/"
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	l, err := load(cfg.Library)
	if err != nil {
		return nil, err
	}
	const sqDepth = 64
	dev := cfg.Device
	if dev == AutoDevice {
		dev = ""
	}
	ep, attr, st := l.Open(dev, cfg.Port, cfg.QPs, sqDepth)
	if err := toError("open device", st, nil); err != nil {
		return nil, err
	}
	e := &Endpoint{ep: ep, rdAtom: RdAtom(attr.MaxQPInitRdAtom), destRdAtom: RdAtom(attr.MaxQPRdAtom),
		tc: cfg.TC, sl: cfg.SL, regFlags: remoteWrite(cfg.RemoteWrite), maxMsg: attr.MaxMsgSize, timeout: 30 * time.Second}
	gids, err := e.selectGIDs(cfg, attr)
	if err != nil {
		e.Close()
		return nil, err
	}
	if attr.LinkLayer == 2 && cfg.SL > 7 {
		// RoCE carries the service level as the VLAN priority (PCP),
		// three bits: mlx5 keeps the low ones without a word.
		e.warnings = append(e.warnings, fmt.Sprintf("--ib-sl %d on RoCE (%s port %d): Ethernet priorities are 0-7 and mlx5 keeps the low 3 bits (priority %d); use --ib-tc for DSCP",
			cfg.SL, attr.Device, attr.Port, cfg.SL&7))
	}
	psns := make([]uint32, cfg.QPs)
	var rnd [4]byte
	for i := range psns {
		rand.Read(rnd[:])
		psns[i] = binary.LittleEndian.Uint32(rnd[:]) & 0xffffff
	}
	e.info = QPInfo{
		Device: attr.Device, Port: attr.Port, LID: attr.LID, GID: "::", GIDIndex: -1, GIDs: gids,
		MTU: MTUBytes(attr.ActiveMTU), QPNs: attr.QPNs, PSNs: psns, RdAtom: e.destRdAtom,
	}
	if len(gids) > 0 {
		e.info.GID, e.info.GIDIndex = gids[0].GID, gids[0].Index
	}
	if r, err := PortRate(cfg.Root, attr.Device, attr.Port); err == nil {
		e.info.RateGbps = r
	}
	return e, nil
}

// selectGIDs lists the GIDs the endpoint offers its peer, preferred
// first: the one --gid-index names, or on RoCE the first RoCE v2 GID of
// each family (IPv4-mapped first) from the port's table in sysfs, or the
// device's own table (types unknown) where sysfs has none. An
// InfiniBand port offers none (it needs none).
func (e *Endpoint) selectGIDs(cfg Config, attr ibvwrap.EndpointAttr) ([]GIDChoice, error) {
	where := fmt.Sprintf("%s port %d", attr.Device, attr.Port)
	ll := "InfiniBand"
	if attr.LinkLayer == 2 {
		ll = "Ethernet"
	}
	// A requested index must exist in the port's table as the device
	// sizes it, whatever sysfs shows.
	if cfg.GIDIndex >= attr.GIDTableLen {
		return nil, fmt.Errorf("rdma: GID index %d does not exist on %s (table of %d entries)", cfg.GIDIndex, where, attr.GIDTableLen)
	}
	if cfg.GIDIndex < 0 && ll == "InfiniBand" {
		return nil, nil
	}
	table, terr := ReadGIDTable(cfg.Root, attr.Device, attr.Port)
	typed := terr == nil && len(table) > 0
	if !typed {
		// No sysfs view: ask the device for its table, types unknown.
		table = e.queryGIDs(attr.GIDTableLen)
	}
	var idx []int
	if cfg.GIDIndex >= 0 {
		if typed {
			if _, err := SelectGID(table, cfg.GIDIndex, ll, where); err != nil {
				return nil, err
			}
		}
		idx = []int{cfg.GIDIndex}
	} else {
		if e, ok := OnPeerSubnet(table, cfg.Peer, InterfaceNets); ok && typed {
			idx = append(idx, e.Index)
		}
		for _, c := range RoCEChoices(table, typed) {
			if !slices.Contains(idx, c.Index) {
				idx = append(idx, c.Index)
			}
		}
	}
	var out []GIDChoice
	for _, i := range idx {
		g, err := e.gid(i)
		if err != nil {
			return nil, err
		}
		if g != [16]byte{} {
			out = append(out, GIDChoice{Index: i, GID: FormatGID(g)})
		}
	}
	switch {
	case len(out) > 0:
		return out, nil
	case cfg.GIDIndex >= 0:
		return nil, fmt.Errorf("rdma: GID index %d on %s is empty", cfg.GIDIndex, where)
	case typed:
		return nil, fmt.Errorf("rdma: no RoCE v2 GID with an address on %s (give --gid-index)", where)
	}
	return nil, fmt.Errorf("rdma: no routable GID on %s (give --gid-index)", where)
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
// the smaller active MTU; reads in flight this side's initiator limit
// capped by the peer's responder limit; GIDs of one family on both ends
// (AgreeGID), after which Info offers only the GID chosen; the traffic
// class and service level of the Config.
func (e *Endpoint) Connect(r QPInfo) error {
	n := len(e.info.QPNs)
	if len(r.QPNs) != n || len(r.PSNs) != n {
		return fmt.Errorf("rdma: connect: remote has %d QPs, this side %d", len(r.QPNs), n)
	}
	mtu := IBMTU(min(e.info.MTU, r.MTU))
	if mtu == 0 {
		return fmt.Errorf("rdma: connect: no common MTU (%d, %d)", e.info.MTU, r.MTU)
	}
	theirs := r.GIDs
	if len(theirs) == 0 {
		theirs = []GIDChoice{{Index: r.GIDIndex, GID: r.GID}}
	}
	mine, rg, err := AgreeGID(e.info.GIDs, theirs)
	if err != nil {
		return err
	}
	rgid, err := ParseGID(rg)
	if err != nil {
		return err
	}
	if len(e.info.GIDs) > 0 {
		e.info.GID, e.info.GIDIndex, e.info.GIDs = mine.GID, mine.Index, []GIDChoice{mine}
	}
	if r.RdAtom > 0 {
		e.rdAtom = min(e.rdAtom, r.RdAtom)
	}
	c := ibvwrap.Conn{GIDIndex: e.info.GIDIndex, MTU: mtu, RdAtom: e.rdAtom, DestRdAtom: e.destRdAtom,
		TC: e.tc, SL: e.sl, LocalPSNs: e.info.PSNs}
	st := e.ep.Connect(c, ibvwrap.Remote{LID: r.LID, GID: rgid, QPNs: r.QPNs, PSNs: r.PSNs})
	return toError("connect", st, nil)
}

// Reg registers n bytes of host memory at addr. The caller keeps the
// memory alive and unmoved until the endpoint is closed.
func (e *Endpoint) Reg(addr uintptr, n int64) (*MR, error) {
	return e.reg(addr, n, false)
}

// RegDevice registers n bytes of device memory at addr (where
// nvidia-peermem lets ibv_reg_mr take a device pointer), with PCIe relaxed
// ordering where libibverbs can ask for it.
func (e *Endpoint) RegDevice(addr uintptr, n int64) (*MR, error) {
	return e.reg(addr, n, true)
}

// remoteWrite is the registration flag that grants remote write, if on.
func remoteWrite(on bool) ibvwrap.RegFlag {
	if on {
		return ibvwrap.RegRemoteWrite
	}
	return 0
}

func (e *Endpoint) reg(addr uintptr, n int64, relaxed bool) (*MR, error) {
	flags := e.regFlags
	if relaxed {
		flags |= ibvwrap.RegRelaxed
	}
	h, st := e.ep.Reg(uint64(addr), n, flags)
	if err := toError("reg mr", st, nil); err != nil {
		return nil, err
	}
	mr := &MR{Addr: uint64(addr), Len: n, LKey: h.LKey, RKey: h.RKey, h: h}
	e.mrs = append(e.mrs, mr)
	return mr, nil
}

// RegDMABuf registers n bytes at offset of a DMA-BUF fd whose memory is
// addressed as iova (the device pointer): GPUDirect RDMA without
// nvidia-peermem, with relaxed ordering as for RegDevice. The
// registration holds its own reference: the caller may close fd as soon
// as it returns (and should, as NCCL does).
func (e *Endpoint) RegDMABuf(fd int, offset int64, iova uint64, n int64) (*MR, error) {
	h, st := e.ep.RegDMABuf(fd, offset, iova, n, e.regFlags|ibvwrap.RegRelaxed)
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
	return e.run(ctx, "read", reads)
}

// Write performs RDMA WRITEs (Len bytes from Local into Remote) as Read
// performs reads, with the same batching, cancellation and abort. The
// remote memory must have been registered for remote write (the peer's
// Config.RemoteWrite): otherwise the write fails with a CompletionError
// (remote access error).
func (e *Endpoint) Write(ctx context.Context, writes []WR) error {
	return e.run(ctx, "write", writes)
}

// run performs a Read's or a Write's requests; op is "read" or "write".
func (e *Endpoint) run(ctx context.Context, op string, reads []WR) error {
	maxLen := uint32(MaxWR)
	if e.maxMsg > 0 {
		maxLen = min(maxLen, e.maxMsg)
	}
	if e.broken != nil {
		return fmt.Errorf("rdma: %s: endpoint unusable after an earlier failure (%v)", op, e.broken)
	}
	wrs, qstart := Plan(reads, len(e.info.QPNs), maxLen)
	bs, starts := Batches(wrs, qstart, 4096)
	for i, b := range bs {
		if ctx.Err() != nil {
			// Nothing in flight between batches: the endpoint stays usable.
			return fmt.Errorf("rdma: %s aborted: %w", op, context.Cause(ctx))
		}
		if err := e.readBatch(ctx, op, b, starts[i]); err != nil {
			e.broken = err
			return err
		}
	}
	return nil
}

// readBatch runs one batch to completion, slice by slice.
func (e *Endpoint) readBatch(ctx context.Context, op string, b []WR, starts []int) error {
	ws := make([]ibvwrap.WR, len(b))
	for j, w := range b {
		ws[j] = ibvwrap.WR(w)
	}
	start := e.ep.StartRead
	if op == "write" {
		start = e.ep.StartWrite
	}
	rd, st := start(ws, starts, e.rdAtom)
	if err := toError(op, st, nil); err != nil {
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
			err = fmt.Errorf("rdma: %s aborted: %w", op, context.Cause(ctx))
		default:
			err = toError(op, st, b)
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

// Usable reports whether the endpoint still takes reads: false after a
// read failed or was aborted with requests in flight (its QPs are then in
// the error state).
func (e *Endpoint) Usable() bool { return e.broken == nil }

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
