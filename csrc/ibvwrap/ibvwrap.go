// Package ibvwrap is the cgo binding of kvtier's libibverbs shim
// (ibvwrap.c in this directory): it loads libibverbs at run time, with no
// verbs headers at build time (ibvcore.h declares the types), and calls
// the shim with Go types. It holds no policy; package rdma is the API to
// use.
package ibvwrap

/*
#cgo LDFLAGS: -ldl -lpthread
#include <stdlib.h>
#include "ibvwrap.h"

// reg_addr registers memory given as an integer address, so Go need not
// turn a uint64 into a pointer.
static int reg_addr(kvt_ibv_ep *ep, uint64_t addr, size_t len, int flags, void **mr,
		    uint32_t *lkey, uint32_t *rkey, kvt_ibv_status *st)
{
	return kvt_ibv_ep_reg(ep, (void *)(uintptr_t)addr, len, flags, mr, lkey, rkey, st);
}
*/
import "C"

import (
	"runtime"
	"strings"
	"unsafe"

	"github.com/kvtier/kvtier/csrc/shim"
)

// Status codes of the shim (ibvwrap.h).
const (
	CodeOK      = C.KVT_IBV_OK
	CodeNoLib   = C.KVT_IBV_ENOLIB
	CodeNoDev   = C.KVT_IBV_ENODEV
	CodeSys     = C.KVT_IBV_ESYS
	CodeWC      = C.KVT_IBV_EWC
	CodeArg     = C.KVT_IBV_EARG
	CodeUnsup   = C.KVT_IBV_EUNSUP
	CodeTimeout = C.KVT_IBV_ETIMEOUT
	CodeAgain   = C.KVT_IBV_EAGAIN
	MaxQP       = C.KVT_IBV_MAXQP
)

// A Status is the outcome of one shim call: Code a Code* code, Errno the
// errno of the failing verb (0 if none), WCStatus the enum ibv_wc_status
// of a failed completion, Index the failing work request (-1 if none).
type Status = shim.Status

func status(st *C.kvt_ibv_status) Status { return shim.Failure(unsafe.Pointer(st)) }

// A Lib is one loaded libibverbs. It is never unloaded.
type Lib struct{ *shim.Lib[C.kv_shim_lib] }

// lib is the shim's table, which opens with the kv_shim_lib (ibvwrap.h
// keeps its layout private).
func (l *Lib) lib() *C.kvt_ibv_lib { return (*C.kvt_ibv_lib)(unsafe.Pointer(l.T)) }

// Load opens libibverbs at path, or where path is "" at libibverbs.so.1,
// then libibverbs.so. Each call loads anew; callers cache.
func Load(path string) (*Lib, Status) {
	l, st := shim.Load(path, func(p, e unsafe.Pointer) *C.kv_shim_lib {
		return (*C.kv_shim_lib)(unsafe.Pointer(C.kvt_ibv_load((*C.char)(p), (*C.kvt_ibv_status)(e))))
	})
	if l == nil {
		return nil, st
	}
	return &Lib{l}, st
}

// HasDMABuf reports whether the library has ibv_reg_dmabuf_mr.
func (l *Lib) HasDMABuf() bool { return C.kvt_ibv_has_dmabuf(l.lib()) != 0 }

// Devices lists the devices the library sees.
func (l *Lib) Devices() ([]string, Status) {
	buf := make([]byte, 4096)
	var st C.kvt_ibv_status
	C.kvt_ibv_devices(l.lib(), (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &st)
	if s := status(&st); !s.OK() {
		return nil, s
	}
	n := 0
	for n < len(buf) && buf[n] != 0 {
		n++
	}
	return strings.Fields(string(buf[:n])), Status{}
}

// EndpointAttr is what an opened endpoint found.
type EndpointAttr struct {
	Device      string
	Port        int
	LinkLayer   int // 1 InfiniBand, 2 Ethernet
	ActiveMTU   int // enum ibv_mtu
	LID         uint16
	GIDTableLen int
	MaxQPRdAtom int // reads in flight per QP the device answers
	// MaxQPInitRdAtom is the reads in flight per QP the device issues.
	MaxQPInitRdAtom int
	MaxMsgSize      uint32
	QPNs            []uint32
}

// An Endpoint is a device context with a PD, a CQ and RC QPs.
type Endpoint struct {
	ep *C.kvt_ibv_ep
}

// Open opens device ("" = first with an active port) at port (0 = first
// active) with nqp RC QPs whose send queues hold sqDepth requests.
func (l *Lib) Open(device string, port, nqp, sqDepth int) (*Endpoint, EndpointAttr, Status) {
	var dev *C.char
	if device != "" {
		dev = C.CString(device)
		defer C.free(unsafe.Pointer(dev))
	}
	var (
		st   C.kvt_ibv_status
		attr C.kvt_ibv_ep_attr
		ep   *C.kvt_ibv_ep
	)
	C.kvt_ibv_ep_open(l.lib(), dev, C.int(port), C.int(nqp), C.int(sqDepth), &ep, &attr, &st)
	if s := status(&st); !s.OK() {
		return nil, EndpointAttr{}, s
	}
	a := EndpointAttr{
		Device: C.GoString(&attr.device[0]), Port: int(attr.port), LinkLayer: int(attr.link_layer),
		ActiveMTU: int(attr.active_mtu), LID: uint16(attr.lid), GIDTableLen: int(attr.gid_tbl_len),
		MaxQPRdAtom: int(attr.max_qp_rd_atom), MaxQPInitRdAtom: int(attr.max_qp_init_rd_atom), MaxMsgSize: uint32(attr.max_msg_sz),
	}
	for i := 0; i < int(attr.nqp); i++ {
		a.QPNs = append(a.QPNs, uint32(attr.qpn[i]))
	}
	return &Endpoint{ep: ep}, a, Status{}
}

// GID reads entry i of the port's GID table.
func (e *Endpoint) GID(i int) ([16]byte, Status) {
	var g [16]byte
	var st C.kvt_ibv_status
	C.kvt_ibv_ep_gid(e.ep, C.int(i), (*C.uint8_t)(unsafe.Pointer(&g[0])), &st)
	return g, status(&st)
}

// An MR is a registration's handle and keys.
type MR struct {
	H          unsafe.Pointer
	LKey, RKey uint32
}

// A RegFlag asks a registration for more than local write and remote
// read.
type RegFlag int

// Registration flags.
const (
	// RegRelaxed asks for PCIe relaxed ordering where libibverbs can say so.
	RegRelaxed RegFlag = C.KVT_IBV_REG_RELAXED
	// RegRemoteWrite grants remote write (RDMA WRITE into the region).
	RegRemoteWrite RegFlag = C.KVT_IBV_REG_REMOTE_WRITE
)

// Reg registers n bytes at addr for local write and remote read, and what
// flags add.
func (e *Endpoint) Reg(addr uint64, n int64, flags RegFlag) (MR, Status) {
	var (
		st         C.kvt_ibv_status
		h          unsafe.Pointer
		lkey, rkey C.uint32_t
	)
	C.reg_addr(e.ep, C.uint64_t(addr), C.size_t(n), C.int(flags), &h, &lkey, &rkey, &st)
	return MR{H: h, LKey: uint32(lkey), RKey: uint32(rkey)}, status(&st)
}

// RegDMABuf registers n bytes at offset of DMA-BUF fd, addressed as iova;
// flags as for Reg. The fd may be closed once it returns.
func (e *Endpoint) RegDMABuf(fd int, offset int64, iova uint64, n int64, flags RegFlag) (MR, Status) {
	var (
		st         C.kvt_ibv_status
		h          unsafe.Pointer
		lkey, rkey C.uint32_t
	)
	C.kvt_ibv_ep_reg_dmabuf(e.ep, C.uint64_t(offset), C.size_t(n), C.uint64_t(iova), C.int(fd), C.int(flags),
		&h, &lkey, &rkey, &st)
	return MR{H: h, LKey: uint32(lkey), RKey: uint32(rkey)}, status(&st)
}

// Dereg deregisters mr.
func (e *Endpoint) Dereg(mr MR) Status {
	var st C.kvt_ibv_status
	C.kvt_ibv_ep_dereg(e.ep, mr.H, &st)
	return status(&st)
}

// A Remote is the other side of a connection, as Connect needs it.
type Remote struct {
	LID        uint16
	GID        [16]byte
	QPNs, PSNs []uint32
}

// A Conn says how Connect moves the QPs to RTS.
type Conn struct {
	GIDIndex   int // -1 on InfiniBand
	MTU        int // enum ibv_mtu
	RdAtom     int // max_rd_atomic: reads this side issues per QP
	DestRdAtom int // max_dest_rd_atomic: reads this side answers per QP
	TC, SL     int // GRH traffic class and service level
	LocalPSNs  []uint32
}

// Connect moves every QP to RTS against r as c says.
func (e *Endpoint) Connect(c Conn, r Remote) Status {
	n := len(c.LocalPSNs)
	lpsn := make([]C.uint32_t, n)
	rqpn := make([]C.uint32_t, n)
	rpsn := make([]C.uint32_t, n)
	for i := range n {
		lpsn[i], rqpn[i], rpsn[i] = C.uint32_t(c.LocalPSNs[i]), C.uint32_t(r.QPNs[i]), C.uint32_t(r.PSNs[i])
	}
	gid := new([16]byte)
	*gid = r.GID
	// The struct passed holds Go pointers: pin what they point to.
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&lpsn[0])
	pin.Pin(&rqpn[0])
	pin.Pin(&rpsn[0])
	pin.Pin(gid)
	cc := C.kvt_ibv_conn{
		gid_index: C.int(c.GIDIndex), mtu: C.int(c.MTU), rd_atom: C.int(c.RdAtom), dest_rd_atom: C.int(c.DestRdAtom),
		traffic_class: C.int(c.TC), sl: C.int(c.SL), local_psn: &lpsn[0], remote_qpn: &rqpn[0], remote_psn: &rpsn[0],
		remote_lid: C.uint16_t(r.LID), remote_gid: (*C.uint8_t)(unsafe.Pointer(&gid[0])),
	}
	var st C.kvt_ibv_status
	C.kvt_ibv_ep_connect(e.ep, &cc, &st)
	return status(&st)
}

// Close tears the endpoint down: QPs, CQ, PD, device.
func (e *Endpoint) Close() { C.kvt_ibv_ep_close(e.ep) }

// A WR is one RDMA READ (Len bytes from Remote/RKey into Local/LKey) or
// RDMA WRITE (from Local/LKey into Remote/RKey) on QP QP.
type WR struct {
	Local, Remote uint64
	LKey, RKey    uint32
	Len           uint32
	QP            int
}

// A Read is a batch of reads or writes in flight.
type Read struct {
	rd *C.kvt_ibv_rd
}

// StartRead copies the batch of reads (wrs grouped by QP: qstart[q] to
// qstart[q+1]-1 are QP q's) into a batch state, keeping up to outstanding
// in flight per QP once polled.
func (e *Endpoint) StartRead(wrs []WR, qstart []int, outstanding int) (*Read, Status) {
	return e.start(C.KVT_IBV_OP_READ, wrs, qstart, outstanding)
}

// StartWrite is StartRead for RDMA WRITEs.
func (e *Endpoint) StartWrite(wrs []WR, qstart []int, outstanding int) (*Read, Status) {
	return e.start(C.KVT_IBV_OP_WRITE, wrs, qstart, outstanding)
}

func (e *Endpoint) start(op C.int, wrs []WR, qstart []int, outstanding int) (*Read, Status) {
	cw := make([]C.kvt_ibv_wr, len(wrs))
	for j, w := range wrs {
		cw[j] = C.kvt_ibv_wr{laddr: C.uint64_t(w.Local), raddr: C.uint64_t(w.Remote), len: C.uint32_t(w.Len),
			lkey: C.uint32_t(w.LKey), rkey: C.uint32_t(w.RKey), qp: C.uint32_t(w.QP)}
	}
	cs := make([]C.int, len(qstart))
	for j, s := range qstart {
		cs[j] = C.int(s)
	}
	var (
		st C.kvt_ibv_status
		rd *C.kvt_ibv_rd
		wp *C.kvt_ibv_wr
	)
	if len(cw) > 0 {
		wp = &cw[0]
	}
	C.kvt_ibv_rd_start(e.ep, op, wp, C.int(len(cw)), &cs[0], C.int(outstanding), &rd, &st)
	if s := status(&st); !s.OK() {
		return nil, s
	}
	return &Read{rd: rd}, Status{}
}

// Poll posts and polls for up to sliceMs; CodeAgain means call again.
func (r *Read) Poll(sliceMs, timeoutMs int) Status {
	var st C.kvt_ibv_status
	C.kvt_ibv_rd_poll(r.rd, C.int(sliceMs), C.int(timeoutMs), &st)
	return status(&st)
}

// Abort moves the QPs to the error state and drains the flushed reads.
func (r *Read) Abort(drainMs int) (int, Status) {
	var st C.kvt_ibv_status
	var flushed C.int
	C.kvt_ibv_rd_abort(r.rd, C.int(drainMs), &flushed, &st)
	return int(flushed), status(&st)
}

// Free frees the read state.
func (r *Read) Free() { C.kvt_ibv_rd_free(r.rd) }
