// Package rdma drives RC queue pairs for RDMA READ through the libibverbs
// shim in csrc/ibvwrap, which finds libibverbs at run time and needs no
// verbs headers to build: kvtier builds anywhere and runs where
// libibverbs or an RDMA device is absent, and says so. It also reads a
// port's GID table from sysfs (through one root path) to pick a RoCE v2
// GID; the NIC collector of the run manifest is in package system.
//
// The policy lives here, in Go: which device, port and GID to use, how a
// chunk list is split into work requests and spread over QPs, how many
// reads each QP keeps in flight, when to give up, and what a failure
// means. The shim only executes: one cgo call opens an endpoint, one
// posts and polls a batch for a slice of about 100 ms, and one aborts a
// read (QPs to ERR, flushed completions drained).
package rdma

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/kvtier/kvtier/csrc/ibvwrap"
)

// MaxGIDIndex bounds a GID index: a port's GID table holds a few hundred
// entries at most.
const MaxGIDIndex = 1 << 16

// AutoDevice is the Device that lets the endpoint take the first device
// with an active port (callers that know the GPU in use pick the nearest
// port before opening: see package system and cmd/kvtier).
const AutoDevice = "auto"

// Bounds of the RoCE traffic class and the InfiniBand service level.
const (
	MaxTC = 255
	MaxSL = 15
)

// A Config says which endpoint to open.
type Config struct {
	Device   string // e.g. mlx5_0, rxe0; "" or AutoDevice picks the first with an active port
	Port     int    // 0 picks the first active port
	GIDIndex int    // -1 selects RoCE v2 GIDs automatically; at most MaxGIDIndex
	QPs      int    // RC queue pairs (default 1)
	Root     string // sysfs root for the GID table ("/" on a live machine)
	// Library is the libibverbs to load; "" tries libibverbs.so.1, then
	// libibverbs.so. Each path is loaded once per process.
	Library string
	// TC is the traffic class of the QPs' address vector (GRH, 0-255;
	// the DSCP and ECN bits of RoCE v2 packets) and SL the service level
	// (0-15), as NCCL_IB_TC and NCCL_IB_SL set them for NCCL.
	TC, SL int
	// Peer is the address the peer is reached at (nil unknown): on RoCE
	// the GID on its subnet is offered first, as NCCL matches subnets,
	// so a multi-address or VLAN port does not pick an address the peer
	// cannot route to.
	Peer net.IP
	// RemoteWrite grants remote write on every memory registration of the
	// endpoint (a pool that takes RDMA WRITEs: kvtier serve --writable);
	// without it a peer's RDMA WRITE fails with a remote access error.
	RemoteWrite bool
}

// check reports a configuration out of range.
func (c Config) check() error {
	switch {
	case c.TC < 0 || c.TC > MaxTC:
		return &Error{Op: "open", Code: ibvwrap.CodeArg, Msg: fmt.Sprintf("traffic class %d outside 0..%d", c.TC, MaxTC)}
	case c.SL < 0 || c.SL > MaxSL:
		return &Error{Op: "open", Code: ibvwrap.CodeArg, Msg: fmt.Sprintf("service level %d outside 0..%d", c.SL, MaxSL)}
	}
	return nil
}

// QPInfo is one side's endpoint as the other side needs it to connect its
// queue pairs: what perftest's out-of-band exchange carries, and the GIDs
// this side offers so both ends agree on one family.
type QPInfo struct {
	Device   string `json:"device"`
	Port     int    `json:"port"`
	LID      uint16 `json:"lid"`
	GID      string `json:"gid"` // IPv6 notation: the preferred (or chosen) GID
	GIDIndex int    `json:"gid_index"`
	// GIDs are the GIDs offered, preferred first (GID is the first); once
	// connected, only the one chosen.
	GIDs     []GIDChoice `json:"gids,omitempty"`
	MTU      int         `json:"mtu"` // active path MTU in bytes
	QPNs     []uint32    `json:"qpns"`
	PSNs     []uint32    `json:"psns"`
	RdAtom   int         `json:"rd_atom"` // reads in flight per QP this side answers
	RateGbps float64     `json:"rate_gbps,omitempty"`
}

// Errors callers branch on with errors.Is.
var (
	ErrNoLibrary   = errors.New("libibverbs not available")
	ErrNoDevice    = errors.New("no RDMA device")
	ErrUnsupported = errors.New("unsupported by this libibverbs")
	ErrTimeout     = errors.New("no completion in time")
	ErrBadArg      = errors.New("bad argument")
)

// An Error is a failed verb: the operation, the shim's message and, for a
// system error, its errno.
type Error struct {
	Op    string
	Code  int
	Errno syscall.Errno
	Msg   string
}

// Error names the operation and the shim's message.
func (e *Error) Error() string { return "rdma: " + e.Op + ": " + e.Msg }

// Is maps the shim's codes onto the package's sentinel errors.
func (e *Error) Is(target error) bool {
	switch e.Code {
	case ibvwrap.CodeNoLib:
		return target == ErrNoLibrary
	case ibvwrap.CodeNoDev:
		return target == ErrNoDevice
	case ibvwrap.CodeUnsup:
		return target == ErrUnsupported
	case ibvwrap.CodeTimeout:
		return target == ErrTimeout
	case ibvwrap.CodeArg:
		return target == ErrBadArg
	}
	return false
}

// Unwrap returns the errno of a system error, nil for any other.
func (e *Error) Unwrap() error {
	if e.Errno != 0 {
		return e.Errno
	}
	return nil
}

// A CompletionError is a work request that completed with an error.
type CompletionError struct {
	Index  int    // index of the work request in the read's list
	WR     WR     // the request itself
	Status int    // enum ibv_wc_status
	Text   string // ibv_wc_status_str
}

// Error names the work request that failed and the completion status.
func (e *CompletionError) Error() string {
	return fmt.Sprintf("rdma: read: work request %d (qp %d, %d bytes from remote %#x rkey %#x) failed: %s (status %d)",
		e.Index, e.WR.QP, e.WR.Len, e.WR.Remote, e.WR.RKey, e.Text, e.Status)
}

// status is the shim's outcome of one call.
type status = ibvwrap.Status

// toError maps a shim status onto an error; wrs names the failing request
// of a read (nil otherwise).
func toError(op string, st status, wrs []WR) error {
	switch st.Code {
	case ibvwrap.CodeOK:
		return nil
	case ibvwrap.CodeWC:
		ce := &CompletionError{Index: st.Index, Status: st.WCStatus, Text: st.Msg}
		if st.Index >= 0 && st.Index < len(wrs) {
			ce.WR = wrs[st.Index]
		}
		return ce
	}
	msg := st.Msg
	if st.Code == ibvwrap.CodeSys && st.Index >= 0 {
		msg = fmt.Sprintf("%s (work request %d)", msg, st.Index)
	}
	return &Error{Op: op, Code: st.Code, Errno: syscall.Errno(st.Errno), Msg: msg}
}

// IBMTU converts between bytes and enum ibv_mtu (1 = 256 ... 5 = 4096).
func IBMTU(bytes int) int {
	e := 0
	for m, v := 256, 1; v <= 5 && m <= bytes; m, v = m*2, v+1 {
		e = v
	}
	return e
}

// MTUBytes returns the bytes of an enum ibv_mtu, 0 if out of range.
func MTUBytes(e int) int {
	if e < 1 || e > 5 {
		return 0
	}
	return 128 << e
}

// RdAtom is the reads in flight per QP kvtier uses of a device limit
// (max_qp_init_rd_atom as initiator, max_qp_rd_atom as responder): the
// limit capped at 16 (ConnectX's value), at least 1.
func RdAtom(deviceMax int) int {
	return max(1, min(deviceMax, 16))
}

// FormatGID renders a raw GID in IPv6 notation.
func FormatGID(raw [16]byte) string { return net.IP(raw[:]).String() }

// ParseGID parses a GID in IPv6 notation or sysfs's colon-separated hex
// groups ("fe80:0000:...").
func ParseGID(s string) ([16]byte, error) {
	var g [16]byte
	ip := net.ParseIP(strings.TrimSpace(s))
	if ip == nil || ip.To16() == nil {
		return g, fmt.Errorf("rdma: bad GID %q", s)
	}
	copy(g[:], ip.To16())
	return g, nil
}
