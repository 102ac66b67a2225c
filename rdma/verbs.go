package rdma

// The shim lives in csrc/; ibvwrap.c and ibvwrap.h here are symbolic
// links to it, so cgo compiles it and the build cache sees its edits.

/*
#cgo LDFLAGS: -ldl -lpthread
#include "ibvwrap.h"
#include <stdlib.h>

// reg_addr registers memory given as an integer address, so Go need not
// turn a uintptr into a pointer.
static int reg_addr(kvt_ibv_ep *ep, uint64_t addr, size_t len, void **mr,
		    uint32_t *lkey, uint32_t *rkey, kvt_ibv_status *st)
{
	return kvt_ibv_ep_reg(ep, (void *)(uintptr_t)addr, len, mr, lkey, rkey, st);
}
*/
import "C"

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Load loads libibverbs (once per process): lib if not empty, else
// $KVTIER_LIBIBVERBS, then libibverbs.so.1 and libibverbs.so.
func Load(lib string) error {
	if lib == "" {
		lib = os.Getenv("KVTIER_LIBIBVERBS")
	}
	var st C.kvt_ibv_status
	var cs *C.char
	if lib != "" {
		cs = C.CString(lib)
		defer C.free(unsafe.Pointer(cs))
	}
	C.kvt_ibv_load(cs, &st)
	return toError("load libibverbs", goStatus(&st), nil)
}

// DeviceNames lists the devices libibverbs sees.
func DeviceNames(lib string) ([]string, error) {
	if err := Load(lib); err != nil {
		return nil, err
	}
	buf := make([]byte, 4096)
	var st C.kvt_ibv_status
	C.kvt_ibv_devices((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &st)
	if err := toError("list devices", goStatus(&st), nil); err != nil {
		return nil, err
	}
	s := string(buf[:clen(buf)])
	return strings.Fields(s), nil
}

// HasDMABuf reports whether the loaded libibverbs has ibv_reg_dmabuf_mr.
func HasDMABuf() bool { return C.kvt_ibv_has_dmabuf() != 0 }

func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

func goStatus(st *C.kvt_ibv_status) status {
	msg := C.GoString(&st.msg[0])
	return status{code: int(st.code), errno: int(st.sys_errno), wcStatus: int(st.wc_status), wrIndex: int(st.wr_index), msg: msg}
}

// An Endpoint is one device context with a PD, a CQ and a set of RC QPs.
// Its methods are not safe for concurrent use, except Close.
type Endpoint struct {
	mu      sync.Mutex
	ep      *C.kvt_ibv_ep
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
	h          unsafe.Pointer
}

// Open opens an endpoint as cfg says and selects its GID.
func Open(cfg Config) (*Endpoint, error) {
	if cfg.QPs < 1 {
		cfg.QPs = 1
	}
	if cfg.Root == "" {
		cfg.Root = "/"
	}
	if err := Load(cfg.Library); err != nil {
		return nil, err
	}
	var dev *C.char
	if cfg.Device != "" {
		dev = C.CString(cfg.Device)
		defer C.free(unsafe.Pointer(dev))
	}
	var (
		st   C.kvt_ibv_status
		attr C.kvt_ibv_ep_attr
		ep   *C.kvt_ibv_ep
	)
	const sqDepth = 64
	C.kvt_ibv_ep_open(dev, C.int(cfg.Port), C.int(cfg.QPs), sqDepth, &ep, &attr, &st)
	if err := toError("open device", goStatus(&st), nil); err != nil {
		return nil, err
	}
	e := &Endpoint{ep: ep, rdAtom: RdAtom(int(attr.max_qp_rd_atom)), maxMsg: uint32(attr.max_msg_sz), timeout: 30 * time.Second}
	name := C.GoString(&attr.device[0])
	port := int(attr.port)
	where := fmt.Sprintf("%s port %d", name, port)
	ll := "InfiniBand"
	if attr.link_layer == 2 {
		ll = "Ethernet"
	}
	table, terr := ReadGIDTable(cfg.Root, name, port)
	if terr != nil || len(table) == 0 {
		// No sysfs view: ask the device for its table, types unknown.
		table = e.queryGIDs(int(attr.gid_tbl_len))
	}
	// A requested index must exist in the port's table as the device
	// sizes it, whatever sysfs shows.
	if cfg.GIDIndex >= int(attr.gid_tbl_len) {
		e.Close()
		return nil, fmt.Errorf("rdma: GID index %d does not exist on %s (table of %d entries)", cfg.GIDIndex, where, int(attr.gid_tbl_len))
	}
	gi, err := SelectGID(table, cfg.GIDIndex, ll, where)
	if err != nil && cfg.GIDIndex < 0 && terr != nil {
		// Types unreadable: take the first non-link-local address.
		gi, err = firstRoutable(table, where)
	}
	if err != nil {
		e.Close()
		return nil, err
	}
	var gid [16]byte
	if gi >= 0 {
		if gid, err = e.gid(gi); err != nil {
			e.Close()
			return nil, err
		}
		if gid == [16]byte{} {
			e.Close()
			return nil, fmt.Errorf("rdma: GID index %d on %s is empty", gi, where)
		}
	}
	psns := make([]uint32, cfg.QPs)
	var rnd [4]byte
	for i := range psns {
		rand.Read(rnd[:])
		psns[i] = binary.LittleEndian.Uint32(rnd[:]) & 0xffffff
	}
	qpns := make([]uint32, cfg.QPs)
	for i := range qpns {
		qpns[i] = uint32(attr.qpn[i])
	}
	e.info = QPInfo{
		Device: name, Port: port, LID: uint16(attr.lid), GID: FormatGID(gid), GIDIndex: gi,
		MTU: MTUBytes(int(attr.active_mtu)), QPNs: qpns, PSNs: psns, RdAtom: e.rdAtom,
	}
	if nic, err := ReadPort(cfg.Root, name, port); err == nil {
		e.info.RateGbps = nic.RateGbps
	}
	return e, nil
}

func firstRoutable(table []GIDEntry, where string) (int, error) {
	for _, t := range table {
		if !t.zero() && !t.linkLocal() {
			return t.Index, nil
		}
	}
	return 0, fmt.Errorf("rdma: no routable GID on %s (give --gid-index)", where)
}

func (e *Endpoint) gid(i int) ([16]byte, error) {
	var g [16]byte
	var st C.kvt_ibv_status
	C.kvt_ibv_ep_gid(e.ep, C.int(i), (*C.uint8_t)(unsafe.Pointer(&g[0])), &st)
	return g, toError(fmt.Sprintf("query GID %d", i), goStatus(&st), nil)
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
	lpsn := make([]C.uint32_t, n)
	rqpn := make([]C.uint32_t, n)
	rpsn := make([]C.uint32_t, n)
	for i := 0; i < n; i++ {
		lpsn[i], rqpn[i], rpsn[i] = C.uint32_t(e.info.PSNs[i]), C.uint32_t(r.QPNs[i]), C.uint32_t(r.PSNs[i])
	}
	var st C.kvt_ibv_status
	C.kvt_ibv_ep_connect(e.ep, C.int(e.info.GIDIndex), C.int(mtu), C.int(e.rdAtom),
		&lpsn[0], &rqpn[0], &rpsn[0], C.uint16_t(r.LID), (*C.uint8_t)(unsafe.Pointer(&rgid[0])), &st)
	return toError("connect", goStatus(&st), nil)
}

// Reg registers n bytes of memory at addr (host memory, or device memory
// where nvidia-peermem is loaded). The caller keeps the memory alive and
// unmoved until the endpoint is closed.
func (e *Endpoint) Reg(addr uintptr, n int64) (*MR, error) {
	var (
		st         C.kvt_ibv_status
		h          unsafe.Pointer
		lkey, rkey C.uint32_t
	)
	C.reg_addr(e.ep, C.uint64_t(addr), C.size_t(n), &h, &lkey, &rkey, &st)
	if err := toError("reg mr", goStatus(&st), nil); err != nil {
		return nil, err
	}
	mr := &MR{Addr: uint64(addr), Len: n, LKey: uint32(lkey), RKey: uint32(rkey), h: h}
	e.mrs = append(e.mrs, mr)
	return mr, nil
}

// RegDMABuf registers n bytes at offset of a DMA-BUF fd whose memory is
// addressed as iova (the device pointer): GPUDirect RDMA without
// nvidia-peermem.
func (e *Endpoint) RegDMABuf(fd int, offset int64, iova uint64, n int64) (*MR, error) {
	var (
		st         C.kvt_ibv_status
		h          unsafe.Pointer
		lkey, rkey C.uint32_t
	)
	C.kvt_ibv_ep_reg_dmabuf(e.ep, C.uint64_t(offset), C.size_t(n), C.uint64_t(iova), C.int(fd), &h, &lkey, &rkey, &st)
	if err := toError("reg dmabuf mr", goStatus(&st), nil); err != nil {
		return nil, err
	}
	mr := &MR{Addr: iova, Len: n, LKey: uint32(lkey), RKey: uint32(rkey), h: h}
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
	cw := make([]C.kvt_ibv_wr, len(b))
	for j, w := range b {
		cw[j] = C.kvt_ibv_wr{laddr: C.uint64_t(w.Local), raddr: C.uint64_t(w.Remote), len: C.uint32_t(w.Len),
			lkey: C.uint32_t(w.LKey), rkey: C.uint32_t(w.RKey), qp: C.uint32_t(w.QP)}
	}
	cs := make([]C.int, len(starts))
	for j, s := range starts {
		cs[j] = C.int(s)
	}
	var (
		st C.kvt_ibv_status
		rd *C.kvt_ibv_rd
	)
	C.kvt_ibv_rd_start(e.ep, &cw[0], C.int(len(cw)), &cs[0], C.int(e.rdAtom), &rd, &st)
	if err := toError("read", goStatus(&st), nil); err != nil {
		return err
	}
	defer C.kvt_ibv_rd_free(rd)
	slice, timeout := C.int(readSlice.Milliseconds()), C.int(e.timeout.Milliseconds())
	for {
		rc := C.kvt_ibv_rd_poll(rd, slice, timeout, &st)
		var err error
		switch rc {
		case codeOK:
			return nil
		case codeAgain:
			if ctx.Err() == nil {
				continue
			}
			err = fmt.Errorf("rdma: read aborted: %w", context.Cause(ctx))
		default:
			err = toError("read", goStatus(&st), b)
		}
		return e.abort(rd, err)
	}
}

// abort moves the QPs to the error state and drains what was in flight;
// cause is the error the read returns. If the flushed completions do not
// all come, the endpoint keeps its memory registrations and resources
// for good (Close and Dereg leave them), as the device may still write.
func (e *Endpoint) abort(rd *C.kvt_ibv_rd, cause error) error {
	var (
		st      C.kvt_ibv_status
		flushed C.int
	)
	C.kvt_ibv_rd_abort(rd, C.int(drainTimeout.Milliseconds()), &flushed, &st)
	if err := toError("abort read", goStatus(&st), nil); err != nil {
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
	for i := len(e.mrs) - 1; i >= 0; i-- {
		var st C.kvt_ibv_status
		C.kvt_ibv_ep_dereg(e.mrs[i].h, &st)
		if err := toError("dereg mr", goStatus(&st), nil); err != nil && first == nil {
			first = err
		}
	}
	e.mrs = nil
	C.kvt_ibv_ep_close(e.ep)
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
			var st C.kvt_ibv_status
			C.kvt_ibv_ep_dereg(mr.h, &st)
			return toError("dereg mr", goStatus(&st), nil)
		}
	}
	return nil
}
