package peer

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/units"
)

// peerMemModules are the kernel modules that let ibv_reg_mr take a
// device pointer: nvidia-peermem (driver 470 and later) and its
// predecessor from Mellanox, nv_peer_mem.
var peerMemModules = []string{"nvidia_peermem", "nv_peer_mem"}

// peerMemLoaded reports whether a peer-memory module is loaded under
// root, which lets ibv_reg_mr take a device pointer.
func peerMemLoaded(root string) bool {
	if root == "" {
		root = "/"
	}
	for _, m := range peerMemModules {
		if _, err := os.Stat(filepath.Join(root, "sys/module", m)); err == nil {
			return true
		}
	}
	return false
}

// regDevice registers device memory on ep: DMA-BUF when it can be
// exported (the fd closed as soon as the registration holds it, as NCCL
// does), else a plain registration where a peer-memory module is loaded.
func regDevice(ep *rdma.Endpoint, d DeviceMem, root string) (*rdma.MR, error) {
	var why error
	if d.Export != nil {
		fd, off, err := d.Export()
		if err == nil {
			mr, err := ep.RegDMABuf(fd, off, uint64(d.Addr), d.Size)
			syscall.Close(fd)
			if err == nil {
				return mr, nil
			}
			why = err
		} else {
			why = fmt.Errorf("export device memory as DMA-BUF: %w", err)
		}
	}
	if peerMemLoaded(root) {
		return ep.RegDevice(d.Addr, d.Size)
	}
	if why != nil {
		return nil, fmt.Errorf("peer: %w (and no nvidia_peermem or nv_peer_mem module)", why)
	}
	return nil, fmt.Errorf("peer: device memory cannot be registered (no DMA-BUF export, no nvidia_peermem or nv_peer_mem module): %w", rdma.ErrUnsupported)
}

// capIPCLock is CAP_IPC_LOCK's bit in /proc/self/status's CapEff.
const capIPCLock = 14

// holdsIPCLock reports whether the process's effective capabilities
// include CAP_IPC_LOCK, from a /proc/self/status text.
func holdsIPCLock(status string) bool {
	c, err := strconv.ParseUint(statusField(status, "CapEff"), 16, 64)
	return err == nil && c&(1<<capIPCLock) != 0
}

// statusField is the value of field name in a /proc/self/status text,
// "" if absent.
func statusField(status, name string) string {
	for line := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// pinnedBytes is what the process has pinned already (VmPin of a
// /proc/self/status text: the kernel's pinned_vm, which every
// registration adds to and RLIMIT_MEMLOCK bounds), 0 if absent.
func pinnedBytes(status string) int64 {
	kb, err := strconv.ParseInt(strings.TrimSuffix(statusField(status, "VmPin"), " kB"), 10, 64)
	if err != nil {
		return 0
	}
	return kb << 10
}

// initialUserNS reports whether a /proc/self/uid_map text is the initial
// user namespace's identity map ("0 0 4294967295"). Inside any other
// (rootless containers) CapEff may show CAP_IPC_LOCK, but the kernel
// asks for it in the initial namespace before letting a registration
// pass the memlock limit, so it does not count there.
func initialUserNS(uidMap string) bool {
	return strings.Join(strings.Fields(uidMap), " ") == "0 0 4294967295"
}

// A lockState is what decides whether a registration may pin more host
// memory.
type lockState struct {
	limit   uint64 // RLIMIT_MEMLOCK's soft limit
	pinned  int64  // what the process has pinned already
	capLock bool   // CAP_IPC_LOCK, effective and in the initial user namespace
	userNS  bool   // CapEff shows CAP_IPC_LOCK, but in a user namespace of its own
}

// memlockHint is how to raise the limit.
const memlockHint = "raise it with `ulimit -l unlimited` (in a container: docker run --ulimit memlock=-1, or the runtime's equivalent), or run with CAP_IPC_LOCK"

// memlockProblem says why n more bytes of host memory cannot be
// registered under st; nil when they can.
func memlockProblem(n int64, st lockState) error {
	if st.capLock || st.limit == unix.RLIM_INFINITY || uint64(st.pinned+n) <= st.limit {
		return nil
	}
	var also string
	if st.pinned > 0 {
		also = fmt.Sprintf(" and the process has %s pinned already (VmPin: other sessions' registrations count too)", units.FormatBytes(st.pinned))
	}
	if st.userNS {
		also += "; CAP_IPC_LOCK inside this user namespace does not lift it (the kernel asks for it in the initial one)"
	}
	return fmt.Errorf("peer: cannot register %s of host memory for RDMA: the locked-memory limit (RLIMIT_MEMLOCK) is %s%s; %s",
		units.FormatBytes(n), units.FormatBytes(int64(min(st.limit, 1<<62))), also, memlockHint)
}

// readLockState reads the process's memlock limit, pinned memory and
// CAP_IPC_LOCK; ok is false when it cannot.
func readLockState() (st lockState, ok bool) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return st, false
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return st, false
	}
	uidMap, err := os.ReadFile("/proc/self/uid_map")
	initNS := err != nil || initialUserNS(string(uidMap)) // no user namespaces: the initial one
	lock := holdsIPCLock(string(status))
	return lockState{limit: rl.Cur, pinned: pinnedBytes(string(status)), capLock: lock && initNS, userNS: lock && !initNS}, true
}

// regHost registers n bytes of host memory at addr on ep, once the
// memlock limit allows it with what the process has pinned already; an
// ENOMEM of the registration itself (a limit reached between the check
// and the call, by another session) carries the same hint.
func regHost(ep *rdma.Endpoint, addr uintptr, n int64) (*rdma.MR, error) {
	st, ok := readLockState()
	if ok {
		if err := memlockProblem(n, st); err != nil {
			return nil, err
		}
	}
	mr, err := ep.Reg(addr, n)
	return mr, regError(err, n, st, ok)
}

// regError adds the memlock hint to an ENOMEM of registering n bytes of
// host memory under st (known: whether st could be read).
func regError(err error, n int64, st lockState, known bool) error {
	switch {
	case !errors.Is(err, syscall.ENOMEM):
		return err
	case !known:
		return fmt.Errorf("%w: the locked-memory limit (RLIMIT_MEMLOCK) may be reached; %s", err, memlockHint)
	}
	return fmt.Errorf("%w: registering %s more of host memory with %s pinned under a locked-memory limit (RLIMIT_MEMLOCK) of %s; %s",
		err, units.FormatBytes(n), units.FormatBytes(st.pinned), units.FormatBytes(int64(min(st.limit, 1<<62))), memlockHint)
}

// peerIP is the address of the peer at addr (host:port), resolving a
// name; nil where it cannot say.
func peerIP(ctx context.Context, addr string) net.IP {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil || len(ips) == 0 {
		return nil
	}
	return ips[0].IP
}

func hostAddr(p []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(p))) }

// serveVerbs runs one verbs session: open an endpoint with as many QPs as
// the client brought, register the pool for remote read (and remote
// write for a writable session: a store's RDMA WRITEs), connect, send
// the rkey and base address, then hold the session until the client
// hangs up on the control connection. The regions the client announces
// it writes go into dirty until it commits them; the endpoint is closed
// when serveVerbs returns, so none of its RDMA WRITEs lands after.
func (s *Server) serveVerbs(ctx context.Context, c net.Conn, h Hello, w Welcome, dirty *regionSet) error {
	refuse := func(err error) error {
		w.Error = err.Error()
		WriteFrame(c, w)
		return err
	}
	if h.Verbs == nil || len(h.Verbs.QPNs) == 0 {
		return refuse(errors.New("verbs hello without queue pairs"))
	}
	if len(h.Verbs.QPNs) > MaxConns {
		return refuse(fmt.Errorf("verbs hello with %d queue pairs (at most %d)", len(h.Verbs.QPNs), MaxConns))
	}
	cfg := s.cfg.RDMA
	cfg.QPs = len(h.Verbs.QPNs)
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		cfg.Peer = a.IP // the GID on the client's subnet first
	}
	cfg.RemoteWrite = w.Writable
	if w.Writable {
		s.cfg.Pool.remoteWrites.Store(true)
		w.Flushes = s.cfg.Pool.flush != nil
	}
	ep, err := rdma.Open(cfg)
	if err != nil {
		return refuse(err)
	}
	defer ep.Close()
	var mr *rdma.MR
	if host := s.cfg.Pool.Host(); host != nil {
		mr, err = regHost(ep, hostAddr(host), int64(len(host)))
	} else {
		b := s.cfg.Pool.Buffer()
		mr, err = regDevice(ep, DeviceMem{Addr: b.Addr(), Size: b.Size(), Export: s.cfg.Pool.export}, cfg.Root)
	}
	if err != nil {
		return refuse(err)
	}
	if err := ep.Connect(*h.Verbs); err != nil {
		return refuse(err)
	}
	info := ep.Info()
	w.Verbs, w.RKey, w.Addr = &info, mr.RKey, mr.Addr
	if err := WriteFrame(c, w); err != nil {
		return err
	}
	return s.control(c, w, dirty)
}

// control answers a verbs session's control requests until the client
// hangs up: the client moves the data by RDMA, and the control
// connection only asks for flushes (where w.Flushes), announces writes
// and commits them (where w.Commits: the regions go into dirty, and a
// commit empties it), and says when the client is done (EOF) or gone.
// Anything else ends the session.
func (s *Server) control(c net.Conn, w Welcome, dirty *regionSet) error {
	r := bufio.NewReader(c)
	var list []Chunk
	for {
		b, err := r.ReadByte()
		if err != nil {
			return nil
		}
		status, msg := byte(statusOK), ""
		switch {
		case b == ctlFlush && w.Flushes:
			if err := s.cfg.Pool.flushRemoteWrites(); err != nil {
				status, msg = statusErr, err.Error()
			}
		case b == ctlWrites && w.Commits:
			list, _, err = s.readBatch(c, r, list[:0])
			dirty.add(list, s.cfg.Pool.Size())
			if err != nil {
				return fmt.Errorf("write announcement: %w", err)
			}
			continue
		case b == ctlCommit && w.Commits:
			dirty.r = dirty.r[:0]
		default:
			return fmt.Errorf("unexpected control byte %#x", b)
		}
		if err := writeStatus(c, status, msg); err != nil {
			return err
		}
	}
}

// A verbsClient reads a peer's pool by RDMA READ over RC QPs.
type verbsClient struct {
	info Info
	opt  DialOptions // how it was dialled, to dial a fresh endpoint
	ctl  net.Conn
	ep   *rdma.Endpoint
	rkey uint32
	base uint64
	root string
	// The registration of the last host destination, reused while the
	// caller reads into the same memory.
	dst hostReg
	// The registrations of the last two sources of writes, most recent
	// first, kept apart from the destination's: a store's source and
	// what its scrub writes both stay registered, so neither a scrub nor
	// a read-back registers the source again inside the next timed
	// store.
	srcs  [2]hostReg
	devMR *rdma.MR
	dev   uintptr
	// gone is closed when the control connection ends (the peer hung up,
	// died, or close was called); goneErr then says how.
	gone    chan struct{}
	goneErr error
	// answers carries the peer's answers to control requests (flushes),
	// one at a time under ctlMu.
	answers chan error
	ctlMu   sync.Mutex
	ann     []byte // the last write announcement, its memory reused (under ctlMu)
}

// watch reads the control connection until it ends. After its welcome
// the peer writes only answers to the client's control requests, which
// go to answers; otherwise the read returns only when the connection is
// closed or reset, or carries what is not an answer.
func (v *verbsClient) watch() {
	r := bufio.NewReader(v.ctl)
	for {
		err := readStatus(r, v.info.Addr)
		if _, refused := errors.AsType[*peerError](err); err != nil && !refused {
			v.goneErr = err
			close(v.gone)
			return
		}
		select {
		case v.answers <- err:
		default: // an answer nobody asked for
		}
	}
}

// flush asks the peer to flush the RDMA writes into its pool, where its
// welcome said it does, and waits for the answer.
func (v *verbsClient) flush(ctx context.Context) error {
	if !v.info.Flushes {
		return nil
	}
	return v.ask(ctx, ctlFlush, "flush its pool")
}

// ask sends the control request b, which asks the peer to do what, and
// waits for the answer, at most the idle timeout (DefaultIdleTimeout
// where none is set).
func (v *verbsClient) ask(ctx context.Context, b byte, what string) error {
	v.ctlMu.Lock()
	defer v.ctlMu.Unlock()
	if v.peerGone() {
		return fmt.Errorf("peer %s closed the control connection before it was asked to %s (%v)", v.info.Addr, what, v.goneErr)
	}
	select {
	case <-v.answers: // a late answer to a request that timed out
	default:
	}
	if _, err := v.ctl.Write([]byte{b}); err != nil {
		return fmt.Errorf("peer %s: asking it to %s: %w", v.info.Addr, what, err)
	}
	wait := cmp.Or(v.opt.IdleTimeout, DefaultIdleTimeout)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err := <-v.answers:
		if pe, ok := errors.AsType[*peerError](err); ok {
			return fmt.Errorf("peer %s could not %s: %s", v.info.Addr, what, pe.msg)
		}
		return nil
	case <-v.gone:
		return fmt.Errorf("peer %s closed the control connection before it could %s (%v)", v.info.Addr, what, v.goneErr)
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("peer %s was asked to %s and did not answer within %s", v.info.Addr, what, wait)
	}
}

// announce tells a peer that undoes uncommitted writes (Info.Commits)
// which regions of its pool the RDMA WRITEs of list are about to write,
// before they are posted: the peer sees no RDMA WRITE, and must know
// what to undo should the session end before a commit. The
// announcement is not answered; the control connection delivers it
// before its end, even when this process is killed.
func (v *verbsClient) announce(list []Chunk) error {
	if !v.info.Commits {
		return nil
	}
	v.ctlMu.Lock()
	defer v.ctlMu.Unlock()
	v.ann = v.ann[:0]
	for _, b := range batchesOf(list) {
		v.ann = appendRequest(append(v.ann, ctlWrites), b, writeFlag)
	}
	if _, err := v.ctl.Write(v.ann); err != nil {
		return fmt.Errorf("peer %s: announcing a write: %w", v.info.Addr, err)
	}
	return nil
}

// peerGone reports whether the control connection has ended.
func (v *verbsClient) peerGone() bool {
	select {
	case <-v.gone:
		return true
	default:
		return false
	}
}

// readCtx derives a context for one read that is cancelled when the
// control connection ends, with that as its cause; stop releases it.
func (v *verbsClient) readCtx(ctx context.Context) (c context.Context, stop func()) {
	c, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case <-v.gone:
			cancel(fmt.Errorf("control connection: %w", v.goneErr))
		case <-done:
		}
	}()
	return c, func() {
		close(done)
		cancel(nil)
	}
}

func dialVerbs(ctx context.Context, addr string, opt DialOptions) (*verbsClient, error) {
	cfg := opt.RDMA
	cfg.QPs = opt.Conns
	cfg.Peer = peerIP(ctx, addr) // the GID on the server's subnet first
	ep, err := rdma.Open(cfg)
	if err != nil {
		return nil, err
	}
	li := ep.Info()
	tc, w, err := dialTCP(ctx, addr, opt, Hello{Transport: Verbs, Verbs: &li, Write: opt.Write})
	if err != nil {
		ep.Close()
		return nil, err
	}
	if w.Verbs == nil {
		tc.c.Close()
		ep.Close()
		return nil, fmt.Errorf("peer %s: welcome without a verbs endpoint", addr)
	}
	if err := ep.Connect(*w.Verbs); err != nil {
		tc.c.Close()
		ep.Close()
		return nil, err
	}
	if opt.IdleTimeout > 0 {
		ep.SetTimeout(opt.IdleTimeout)
	}
	rkey := w.RKey
	if opt.Faults.CorruptRKey {
		rkey ^= 0x5a5a5a // test only: the peer's NIC must refuse
	}
	v := &verbsClient{
		info: Info{Addr: addr, PoolBytes: w.PoolBytes, Seed: w.Seed, Mem: w.Mem, Transport: Verbs, Device: li.Device, RateGbps: li.RateGbps,
			Writable: w.Writable, Flushes: w.Flushes, Commits: w.Commits},
		opt: opt, ctl: tc.c, ep: ep, rkey: rkey, base: w.Addr, root: cfg.Root,
		gone: make(chan struct{}), answers: make(chan error, 1),
	}
	go v.watch()
	return v, nil
}

// wrs turns list into work requests: Dst in the local memory at local,
// Src in the peer's pool (for a read the source, for a write the target).
func (v *verbsClient) wrs(local uint64, lkey uint32, list []Chunk) []rdma.WR {
	out := make([]rdma.WR, len(list))
	for i, ch := range list {
		out[i] = rdma.WR{Local: local + uint64(ch.Dst), LKey: lkey, Remote: v.base + uint64(ch.Src), RKey: v.rkey, Len: uint32(ch.Len)}
	}
	return out
}

// A hostReg is a registration of host memory and the memory it covers.
type hostReg struct {
	mr  *rdma.MR
	buf []byte
}

// register registers p in r unless it is the memory r holds already.
func (v *verbsClient) register(r *hostReg, p []byte) error {
	if r.mr != nil && len(r.buf) == len(p) && hostAddr(r.buf) == hostAddr(p) {
		return nil
	}
	if r.mr != nil {
		v.ep.Dereg(r.mr)
		r.mr, r.buf = nil, nil
	}
	mr, err := regHost(v.ep, hostAddr(p), int64(len(p)))
	if err != nil {
		return err
	}
	r.mr, r.buf = mr, p
	return nil
}

func (v *verbsClient) read(ctx context.Context, dst []byte, list []Chunk) error {
	if err := v.register(&v.dst, dst); err != nil {
		return err
	}
	return v.readWRs(ctx, v.wrs(v.dst.mr.Addr, v.dst.mr.LKey, Split(list, int64(rdma.MaxWR))))
}

// write pushes the chunks of list from src (at Dst) into the peer's pool
// (at Src) by RDMA WRITE; src keeps its registration while it is the
// same memory.
func (v *verbsClient) write(ctx context.Context, src []byte, list []Chunk) error {
	mr, err := v.registerSrc(src)
	if err != nil {
		return err
	}
	if err := v.announce(list); err != nil {
		return err
	}
	return v.runWRs(ctx, "write", v.wrs(mr.Addr, mr.LKey, Split(list, int64(rdma.MaxWR))))
}

// registerSrc returns the registration of p as a source of writes: one
// of the two kept, or a new one in place of the least recently used.
func (v *verbsClient) registerSrc(p []byte) (*rdma.MR, error) {
	for i, r := range v.srcs {
		if r.mr != nil && len(r.buf) == len(p) && hostAddr(r.buf) == hostAddr(p) {
			copy(v.srcs[1:i+1], v.srcs[:i])
			v.srcs[0] = r
			return r.mr, nil
		}
	}
	last := len(v.srcs) - 1
	if err := v.register(&v.srcs[last], p); err != nil {
		return nil, err
	}
	r := v.srcs[last]
	copy(v.srcs[1:], v.srcs[:last])
	v.srcs[0] = r
	return r.mr, nil
}

func (v *verbsClient) readDevice(ctx context.Context, dst DeviceMem, list []Chunk) error {
	if err := v.registerDevice(dst); err != nil {
		return err
	}
	return v.readWRs(ctx, v.wrs(uint64(dst.Addr), v.devMR.LKey, Split(list, int64(rdma.MaxWR))))
}

// writeDevice pushes the chunks of list from device memory src (at Dst)
// into the peer's pool (at Src) by RDMA WRITE, the NIC reading the
// device memory (GPUDirect RDMA).
func (v *verbsClient) writeDevice(ctx context.Context, src DeviceMem, list []Chunk) error {
	if err := v.registerDevice(src); err != nil {
		return err
	}
	if err := v.announce(list); err != nil {
		return err
	}
	return v.runWRs(ctx, "write", v.wrs(uint64(src.Addr), v.devMR.LKey, Split(list, int64(rdma.MaxWR))))
}

// registerDevice registers device memory d unless it is the memory
// registered already (reads into it and writes from it share one).
func (v *verbsClient) registerDevice(d DeviceMem) error {
	if v.devMR != nil && v.dev == d.Addr && v.devMR.Len == d.Size {
		return nil
	}
	if v.devMR != nil {
		v.ep.Dereg(v.devMR)
		v.devMR = nil
	}
	mr, err := regDevice(v.ep, d, v.root)
	if err != nil {
		return err
	}
	v.devMR, v.dev = mr, d.Addr
	return nil
}

// goneGrace is how long a failed read waits to learn whether the peer
// has gone, to say so.
const goneGrace = 100 * time.Millisecond

// readWRs runs the reads, aborting them as soon as the control connection
// ends or ctx is done, and names the peer in an error.
func (v *verbsClient) readWRs(ctx context.Context, wrs []rdma.WR) error {
	return v.runWRs(ctx, "read", wrs)
}

// runWRs runs the reads or writes (op), as readWRs says.
func (v *verbsClient) runWRs(ctx context.Context, op string, wrs []rdma.WR) error {
	if v.peerGone() {
		return fmt.Errorf("peer %s closed the control connection before the %s (%v)", v.info.Addr, op, v.goneErr)
	}
	rctx, stop := v.readCtx(ctx)
	run := v.ep.Read
	if op == "write" {
		run = v.ep.Write
	}
	err := run(rctx, wrs)
	stop()
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && !v.peerGone() {
		// A peer that dies can fail reads (its memory deregistered) a
		// moment before its socket's FIN arrives: give that a moment.
		select {
		case <-v.gone:
		case <-time.After(goneGrace):
		}
	}
	if v.peerGone() {
		return fmt.Errorf("peer %s closed the control connection mid-%s: %w", v.info.Addr, op, err)
	}
	return fmt.Errorf("peer %s: %w", v.info.Addr, err)
}

// fresh dials the peer again: a new control connection and a new
// endpoint (PD, CQ and QPs), for a client whose endpoint a failed read
// left unusable.
func (v *verbsClient) fresh(ctx context.Context) (*verbsClient, error) {
	return dialVerbs(ctx, v.info.Addr, v.opt)
}

func (v *verbsClient) close() error {
	v.ctl.Close()
	return v.ep.Close()
}

// retire closes a session the client leaves for a fresh one before it
// writes on that one. A peer that undoes uncommitted writes
// (Info.Commits) fills what the session announced with its pattern
// again once the session has ended, on its own goroutine: retire hangs
// up and waits, at most the idle timeout, for the peer to close its end
// of the control connection, which it does after that undoing, so the
// undoing cannot land on what the fresh session writes later (a failed
// GPUDirect probe write's region, written again through the bounce
// buffer, was overwritten with the pattern when the peer was slow).
func (v *verbsClient) retire(ctx context.Context) error {
	tc, ok := v.ctl.(*net.TCPConn)
	if !v.info.Commits || !ok {
		return v.close()
	}
	eperr := v.ep.Close()
	tc.CloseWrite()
	wait := cmp.Or(v.opt.IdleTimeout, DefaultIdleTimeout)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var err error
	select {
	case <-v.gone:
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-timer.C:
		err = fmt.Errorf("peer %s did not end the session it is to undo within %s", v.info.Addr, wait)
	}
	v.ctl.Close()
	return errors.Join(err, eperr)
}
