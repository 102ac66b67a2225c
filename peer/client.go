package peer

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/kvtier/kvtier/rdma"
)

// DialOptions say how to reach a peer.
type DialOptions struct {
	Transport string // tcp (default) or verbs
	// Conns is the number of parallel TCP connections, or of RC QPs for
	// verbs (default 1).
	Conns int
	RDMA  rdma.Config // verbs endpoint; QPs is set from Conns
	// Timeout bounds connecting and the handshake (default 10 s).
	Timeout time.Duration
	// Token is the run token sent in the hello (servers started with one
	// refuse clients without it).
	Token string
	// Write asks the peer for sessions that may write into its pool
	// (WriteChunks); a peer not started writable refuses the dial.
	Write bool
	// IdleTimeout, when positive, turns a peer that moves no data for
	// that long in the middle of a read into an error: on TCP no byte
	// read or written, on verbs no completion. Zero waits as long as the
	// connection lives (and, for verbs, the endpoint's own 30 s).
	IdleTimeout time.Duration
	// ProbeTimeout bounds the GPUDirect probe of DeviceDestination
	// (default DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// Faults are test-only faults the client injects.
	Faults Faults
}

// Faults are test-only switches: they make a client send reads the peer
// must refuse, to check that it does. The command line (peerflag.EnvFaults,
// in a test build) sets them from the environment variables named by EnvCorruptRKey, EnvSkipBounds and
// EnvOutOfPool (the soft-RoCE VM test sets those).
type Faults struct {
	// CorruptRKey makes a verbs client use a wrong rkey.
	CorruptRKey bool
	// SkipBounds makes a client skip its own pool-bounds check, so an
	// out-of-pool read reaches the peer (or its NIC).
	SkipBounds bool
	// OutOfPool makes a client shift every read past the end of the
	// peer's pool (and skip its own check): the TCP server must refuse
	// it, and for verbs the peer's NIC must (remote access error).
	OutOfPool bool
}

// Info is what a client learned about its peer.
type Info struct {
	Addr      string
	PoolBytes int64
	Seed      uint64
	Mem       string // host | gpu
	Transport string
	Device    string  // NIC for verbs, "tcp" otherwise
	RateGbps  float64 // NIC line rate for verbs, 0 unknown
	Writable  bool    // the sessions may write (WriteChunks)
	// Flushes says the peer flushes the RDMA writes into its pool when
	// asked (Flush): a writable verbs session into GPU memory.
	Flushes bool
	// Commits says the peer undoes what a session wrote and did not
	// commit (Commit) when the session ends.
	Commits bool
}

// A Client reads chunks from a peer's pool.
type Client struct {
	info   Info
	tcp    []*tcpConn
	verbs  *verbsClient
	faults Faults
}

// The environment variables peerflag.EnvFaults reads into Faults (set to a
// non-empty value to inject the fault).
const (
	EnvCorruptRKey = "KVTIER_TEST_CORRUPT_RKEY" // Faults.CorruptRKey
	EnvSkipBounds  = "KVTIER_TEST_SKIP_BOUNDS"  // Faults.SkipBounds
	EnvOutOfPool   = "KVTIER_TEST_OUT_OF_POOL"  // Faults.OutOfPool
)

// Dial connects to the peer at addr and shakes hands on every connection.
func Dial(ctx context.Context, addr string, opt DialOptions) (*Client, error) {
	if err := CheckToken(opt.Token); err != nil {
		return nil, fmt.Errorf("peer %s: %w", addr, err)
	}
	if opt.Transport == "" {
		opt.Transport = TCP
	}
	if opt.Conns < 1 {
		opt.Conns = 1
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Second
	}
	c := &Client{faults: opt.Faults}
	switch opt.Transport {
	case TCP:
		for i := 0; i < opt.Conns; i++ {
			tc, w, err := dialTCP(ctx, addr, opt, Hello{Transport: TCP, Write: opt.Write})
			if err != nil {
				c.Close()
				return nil, err
			}
			c.tcp = append(c.tcp, tc)
			c.info = Info{Addr: addr, PoolBytes: w.PoolBytes, Seed: w.Seed, Mem: w.Mem, Transport: TCP, Device: "tcp", Writable: w.Writable, Commits: w.Commits}
		}
	case Verbs:
		vc, err := dialVerbs(ctx, addr, opt)
		if err != nil {
			return nil, err
		}
		c.verbs = vc
		c.info = vc.info
	default:
		return nil, fmt.Errorf("peer: unknown transport %q (want tcp or verbs)", opt.Transport)
	}
	return c, nil
}

// dialTCP opens one connection and shakes hands.
func dialTCP(ctx context.Context, addr string, opt DialOptions, h Hello) (*tcpConn, Welcome, error) {
	timeout := opt.Timeout
	h.Token = opt.Token
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, Welcome{}, fmt.Errorf("peer %s: %w", addr, err)
	}
	conn.SetDeadline(time.Now().Add(timeout)) // the handshake's bound
	// A cancelled ctx (Ctrl-C) ends a handshake the peer does not answer
	// at once, not after the timeout.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var w Welcome
	if err := WriteFrame(conn, h); err != nil {
		conn.Close()
		return nil, w, fmt.Errorf("peer %s: handshake: %w", addr, cmp.Or(ctx.Err(), err))
	}
	if err := ReadFrame(conn, &w); err != nil {
		conn.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
			return nil, w, fmt.Errorf("peer %s: accepted the connection but sent no answer to kvtier's handshake within %s (not a kvtier serve peer, or one too busy): %w", addr, timeout, err)
		}
		return nil, w, fmt.Errorf("peer %s: %w", addr, cmp.Or(ctx.Err(), err))
	}
	if w.Error != "" {
		conn.Close()
		return nil, w, fmt.Errorf("peer %s refused: %s", addr, w.Error)
	}
	conn.SetDeadline(time.Time{})
	t := &tcpConn{addr: addr, c: conn, idle: opt.IdleTimeout}
	t.r = bufio.NewReaderSize(idleReader{t}, 1<<20)
	return t, w, nil
}

// Info describes the peer.
func (c *Client) Info() Info { return c.info }

// check refuses a list that falls outside the local buffer (local: the
// destination of a read, the source of a write) or the peer's pool.
func (c *Client) check(local string, dstLen int64, list []Chunk) error {
	skipPool := c.faults.SkipBounds || c.faults.OutOfPool
	for i, ch := range list {
		if ch.Len <= 0 || ch.Dst < 0 || ch.Dst > dstLen-ch.Len {
			return fmt.Errorf("peer: chunk %d (%d bytes to offset %d) outside the %s of %d bytes", i, ch.Len, ch.Dst, local, dstLen)
		}
		if !skipPool && (ch.Src < 0 || ch.Src > c.info.PoolBytes-ch.Len) {
			return fmt.Errorf("peer: chunk %d (%d bytes at offset %d) outside the peer's pool of %d bytes", i, ch.Len, ch.Src, c.info.PoolBytes)
		}
	}
	return nil
}

// ReadChunks reads every chunk of list from the peer's pool into dst,
// spread over the client's connections or QPs.
func (c *Client) ReadChunks(ctx context.Context, dst []byte, list []Chunk) error {
	if c.faults.OutOfPool {
		shifted := make([]Chunk, len(list))
		for i, ch := range list {
			shifted[i] = Chunk{Src: ch.Src + c.info.PoolBytes, Dst: ch.Dst, Len: ch.Len}
		}
		list = shifted
	}
	return c.move(int64(len(dst)), list, func() error { return c.verbs.read(ctx, dst, list) },
		func(t *tcpConn, p []Chunk) error { return t.read(ctx, dst, p) })
}

// move checks list against a local buffer of n bytes and moves it: by
// verbs where the session has them, else spread over the TCP connections.
func (c *Client) move(n int64, list []Chunk, verbs func() error, tcp func(t *tcpConn, p []Chunk) error) error {
	if err := c.check("destination", n, list); err != nil {
		return err
	}
	if len(list) == 0 {
		return nil
	}
	if c.verbs != nil {
		return verbs()
	}
	return c.spread(list, tcp)
}

// spread cuts big chunks so every TCP connection gets a share of one
// message, and runs do on each connection's share at once.
func (c *Client) spread(list []Chunk, do func(t *tcpConn, p []Chunk) error) error {
	parts := Share(Split(list, 4<<20), len(c.tcp))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		if len(p) == 0 {
			continue
		}
		wg.Go(func() { errs[i] = do(c.tcp[i], p) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// WriteChunks writes the chunks of list (the same list a read takes)
// the other way: Len bytes from offset Dst of src into offset Src of the
// peer's pool, spread over the client's connections. The peer must have
// granted writes (Info.Writable). Over verbs every chunk is an RDMA WRITE
// into the pool, which the peer registered for remote write.
func (c *Client) WriteChunks(ctx context.Context, src []byte, list []Chunk) error {
	if err := c.mayWrite(); err != nil {
		return err
	}
	return c.move(int64(len(src)), list, func() error { return c.verbs.write(ctx, src, list) },
		func(t *tcpConn, p []Chunk) error { return t.write(ctx, src, p) })
}

// mayWrite says why the client's session may not write, nil if it may.
func (c *Client) mayWrite() error {
	if !c.info.Writable {
		return fmt.Errorf("peer %s: the session may not write (dial with DialOptions.Write; the peer needs kvtier serve --writable)", c.info.Addr)
	}
	return nil
}

// Commit tells the peer that what the client wrote into its pool so far
// is to stay. A peer that says so (Info.Commits) fills every region a
// session wrote and did not commit with its pattern again when the
// session ends, however it ends (the writer closed, killed, or cut off),
// so that later loads from it verify; a writer that puts the pattern
// back itself commits once it has. Elsewhere there is nothing to do.
func (c *Client) Commit(ctx context.Context) error {
	if !c.info.Commits {
		return nil
	}
	if c.verbs != nil {
		return c.verbs.ask(ctx, ctlCommit, "commit its writes")
	}
	var errs []error
	for _, t := range c.tcp {
		errs = append(errs, t.commit(ctx))
	}
	return errors.Join(errs...)
}

// Flush makes what the client wrote into the peer's pool by RDMA WRITE
// visible to the peer's device before it is read back: where the peer
// said it flushes (Info.Flushes: GPU memory written by GPUDirect RDMA,
// whose device may not order those writes before its own reads), it
// asks and waits for the peer's cuFlushGPUDirectRDMAWrites. Elsewhere
// there is nothing to do: TCP writes are the peer's own copies, and host
// memory needs no flush.
func (c *Client) Flush(ctx context.Context) error {
	if c.verbs == nil {
		return nil
	}
	return c.verbs.flush(ctx)
}

// Prepare readies dst for reads ahead of timing: a verbs client registers
// it (ReadChunks reuses the registration while dst is the same memory);
// for TCP there is nothing to do.
func (c *Client) Prepare(dst []byte) error {
	if c.verbs == nil || len(dst) == 0 {
		return nil
	}
	return c.verbs.register(&c.verbs.dst, dst)
}

// PrepareWrite readies src for writes ahead of timing as Prepare readies
// a destination: a verbs client registers it (WriteChunks reuses the
// registration while src is the same memory).
func (c *Client) PrepareWrite(src []byte) error {
	if c.verbs == nil || len(src) == 0 {
		return nil
	}
	_, err := c.verbs.registerSrc(src)
	return err
}

// ReadToDevice reads straight into device memory (GPUDirect RDMA). It
// needs transport verbs and a DMA-BUF export or nvidia-peermem; otherwise
// the error wraps rdma.ErrUnsupported.
func (c *Client) ReadToDevice(ctx context.Context, dst DeviceMem, list []Chunk) error {
	if c.verbs == nil {
		return fmt.Errorf("peer: device memory over tcp: %w", rdma.ErrUnsupported)
	}
	if err := c.check("destination", dst.Size, list); err != nil {
		return err
	}
	return c.verbs.readDevice(ctx, dst, list)
}

// Close closes every connection and the verbs endpoint.
func (c *Client) Close() error {
	var errs []error
	for _, t := range c.tcp {
		if t != nil {
			errs = append(errs, t.c.Close())
		}
	}
	c.tcp = nil
	if c.verbs != nil {
		errs = append(errs, c.verbs.close())
		c.verbs = nil
	}
	return errors.Join(errs...)
}

// A tcpConn is one data connection. Requests are written by one goroutine
// while responses are read by another, so batches pipeline.
type tcpConn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
	mu   sync.Mutex
	// idle is the idle timeout (0 none). Each read and write of the
	// connection moves its deadline idle ahead, unless a cancelled read
	// has set it in the past (cancelled, under dmu).
	idle      time.Duration
	dmu       sync.Mutex
	cancelled bool
}

// extend moves the read or write deadline idle ahead of now.
func (t *tcpConn) extend(read bool) {
	if t.idle <= 0 {
		return
	}
	t.dmu.Lock()
	defer t.dmu.Unlock()
	if t.cancelled {
		return
	}
	if read {
		t.c.SetReadDeadline(time.Now().Add(t.idle))
	} else {
		t.c.SetWriteDeadline(time.Now().Add(t.idle))
	}
}

// cancel makes every pending and later read and write fail at once.
func (t *tcpConn) cancel() {
	t.dmu.Lock()
	defer t.dmu.Unlock()
	t.cancelled = true
	t.c.SetDeadline(time.Unix(1, 0))
}

// An idleReader reads the connection with the idle deadline moved ahead
// before each read.
type idleReader struct{ t *tcpConn }

func (r idleReader) Read(p []byte) (int, error) {
	r.t.extend(true)
	return r.t.c.Read(p)
}

// read sends list as batches and reads each answer into dst.
func (t *tcpConn) read(ctx context.Context, dst []byte, list []Chunk) error {
	var buf []byte
	send := func(b []Chunk) error {
		buf = appendRequest(buf[:0], b, 0)
		_, err := t.c.Write(buf)
		return err
	}
	return t.exchange(ctx, list, send, func(batches [][]Chunk, werr <-chan error) error {
		var first error
		for _, b := range batches {
			err := t.readAnswer(dst, b)
			if _, ok := errors.AsType[*peerError](err); ok {
				// The peer refused this batch and goes on; keep reading
				// the answers to the batches already sent.
				first = cmp.Or(first, err)
				continue
			}
			if err != nil {
				return t.abort(ctx, werr, t.wrap(err))
			}
		}
		if err := <-werr; err != nil && first == nil {
			first = t.wrap(err)
		}
		return first
	})
}

// write sends list as write batches, each its pairs then its bytes from
// src, while the answers are read; a refusal ends the connection, as the
// peer ends the session.
func (t *tcpConn) write(ctx context.Context, src []byte, list []Chunk) error {
	var hdr []byte
	send := func(b []Chunk) error {
		hdr = appendRequest(hdr[:0], b, writeFlag)
		bufs := net.Buffers{hdr}
		for _, ch := range b {
			bufs = append(bufs, src[ch.Dst:ch.Dst+ch.Len])
		}
		_, err := bufs.WriteTo(idleWriter{t})
		return err
	}
	return t.exchange(ctx, list, send, func(batches [][]Chunk, werr <-chan error) error {
		for range batches {
			err := t.readAnswer(nil, nil)
			if pe, ok := errors.AsType[*peerError](err); ok {
				err = fmt.Errorf("peer %s refused a write: %s", pe.addr, pe.msg)
			} else if err != nil {
				err = t.wrap(err)
			}
			if err != nil {
				// a refused write ends the session
				return t.abort(ctx, werr, err)
			}
		}
		if err := <-werr; err != nil {
			return t.wrap(err)
		}
		return nil
	})
}

// appendRequest appends a request of the data protocol for list to
// buf: its count (with flags, writeFlag for a write), then each chunk's
// offset in the pool and length.
func appendRequest(buf []byte, list []Chunk, flags uint32) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(list))|flags)
	for _, ch := range list {
		buf = binary.BigEndian.AppendUint64(buf, uint64(ch.Src))
		buf = binary.BigEndian.AppendUint64(buf, uint64(ch.Len))
	}
	return buf
}

// commit sends a write request without chunks, which commits what the
// connection's session wrote, and reads the peer's answer.
func (t *tcpConn) commit(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	stop := context.AfterFunc(ctx, t.cancel)
	defer stop()
	t.extend(false)
	_, err := t.c.Write(appendRequest(nil, nil, writeFlag))
	if err == nil {
		t.extend(true)
		err = t.readAnswer(nil, nil)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if pe, ok := errors.AsType[*peerError](err); ok {
		return fmt.Errorf("peer %s refused a commit: %s", pe.addr, pe.msg)
	}
	if err != nil {
		return t.wrap(err)
	}
	return nil
}

// exchange holds the connection for one call: send writes the batches
// of list one by one from a goroutine, whose result arrives on werr,
// while answer reads the peer's answers. Cancelling ctx ends both.
func (t *tcpConn) exchange(ctx context.Context, list []Chunk, send func([]Chunk) error,
	answer func(batches [][]Chunk, werr <-chan error) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	stop := context.AfterFunc(ctx, t.cancel)
	defer stop()
	batches := batchesOf(list)
	werr := make(chan error, 1)
	go func() {
		for _, b := range batches {
			t.extend(false)
			if err := send(b); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	return answer(batches, werr)
}

// abort closes a connection whose stream is out of step after err, waits
// for its sender and returns what ended the call: the context's error
// when it was cancelled, else err.
func (t *tcpConn) abort(ctx context.Context, werr <-chan error, err error) error {
	t.c.Close()
	<-werr
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// batchesOf cuts list into requests of at most 4096 chunks.
func batchesOf(list []Chunk) [][]Chunk {
	var batches [][]Chunk
	for len(list) > 0 {
		n := min(len(list), 4096)
		batches = append(batches, list[:n])
		list = list[n:]
	}
	return batches
}

// An idleWriter writes the connection with the idle deadline moved
// ahead before each write.
type idleWriter struct{ t *tcpConn }

func (w idleWriter) Write(p []byte) (int, error) {
	w.t.extend(false)
	return w.t.c.Write(p)
}

// A peerError is a refusal the peer sent.
type peerError struct{ addr, msg string }

func (e *peerError) Error() string { return fmt.Sprintf("peer %s refused a read: %s", e.addr, e.msg) }

// readStatus reads the status that opens an answer from the peer at
// addr: nil for OK, a *peerError with its message for a refusal, another
// error where the stream breaks.
func readStatus(r io.Reader, addr string) error {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxMessage {
		return fmt.Errorf("answer message of %d bytes", n)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return err
	}
	if hdr[0] != statusOK {
		return &peerError{addr, string(msg)}
	}
	return nil
}

func (t *tcpConn) readAnswer(dst []byte, b []Chunk) error {
	if err := readStatus(t.r, t.addr); err != nil {
		return err
	}
	for _, ch := range b {
		if _, err := io.ReadFull(t.r, dst[ch.Dst:ch.Dst+ch.Len]); err != nil {
			return err
		}
	}
	return nil
}

func (t *tcpConn) wrap(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("peer %s closed the connection mid-read", t.addr)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && t.idle > 0 {
		return fmt.Errorf("peer %s moved no data for %s (idle timeout): %w", t.addr, t.idle, err)
	}
	return fmt.Errorf("peer %s: %w", t.addr, err)
}
