package peer

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/kvtier/kvtier/pattern"
	"github.com/kvtier/kvtier/rdma"
)

// Wire limits of the TCP data transport.
const (
	// maxBatch is the most chunks one request may carry.
	maxBatch = 1 << 16
	// Response statuses.
	statusOK  = 0
	statusErr = 1
	// writeFlag marks a request's count as a write: the (offset, length)
	// pairs are followed by the bytes of every chunk, in order.
	writeFlag = 1 << 31
)

// A ServerConfig says what a server serves.
type ServerConfig struct {
	Pool *Pool
	// Transport is what the server offers: "tcp", or "verbs" (which serves
	// TCP clients too).
	Transport string
	// Writable lets clients that ask write into the pool (stores);
	// otherwise the pool is read-only and a hello that asks to write is
	// refused.
	Writable bool
	// RDMA configures the endpoint a verbs session opens.
	RDMA rdma.Config
	// Log receives one line per refused or failed session; nil discards.
	Log io.Writer
	// Token, when not empty, is the run token every client's hello must
	// carry; others are refused.
	Token string
	// HandshakeTimeout bounds the wait for a client's hello (default
	// 10 s), so a connection that never speaks holds nothing for long.
	HandshakeTimeout time.Duration
	// IdleTimeout, when positive, ends a TCP session whose client sends
	// nothing, or reads nothing of an answer, for that long (a frozen or
	// vanished client). A verbs session lasts as long as its control
	// connection: its reads do not pass through the server.
	IdleTimeout time.Duration
	// MaxSessions bounds the connections served at once, handshakes
	// included (default DefaultMaxSessions); one more is refused with a
	// Welcome saying so.
	MaxSessions int
}

// Server limits (README "Limits").
const (
	// DefaultIdleTimeout is kvtier's default idle timeout on the data
	// path: kvtier serve's sessions, transfer's and the remote tier's
	// reads.
	DefaultIdleTimeout = 30 * time.Second
	// IdleTimeoutUsage is the one meaning of --idle-timeout, in every
	// command that takes it.
	IdleTimeoutUsage = "a peer, server or client that moves no data for this long is gone: its request, read or session fails (an error row where it measured)"
	// DefaultMaxSessions is ServerConfig.MaxSessions when unset.
	DefaultMaxSessions = 1024
	// maxHello bounds a client's hello (a verbs hello of MaxConns QPs is
	// a few KiB).
	maxHello = 64 << 10
	// writeGroup is the most bytes one write of an answer carries, so
	// that the idle deadline moves with progress.
	writeGroup = 4 << 20
)

// A Server answers chunk reads from its pool. It serves any number of
// clients at once; a client that vanishes mid-read ends only its own
// session.
type Server struct {
	cfg ServerConfig

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewServer returns a server of the pool in cfg.
func NewServer(cfg ServerConfig) *Server {
	if cfg.Transport == "" {
		cfg.Transport = TCP
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	return &Server{cfg: cfg, conns: map[net.Conn]struct{}{}}
}

// Serve accepts connections on ln until ctx is cancelled, then closes the
// listener and every session and returns nil once they have ended.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
	})
	defer stop()
	var err error
	for {
		var c net.Conn
		c, err = ln.Accept()
		if err != nil {
			break
		}
		s.mu.Lock()
		if ctx.Err() != nil {
			s.mu.Unlock()
			c.Close()
			break
		}
		if len(s.conns) >= s.cfg.MaxSessions {
			s.mu.Unlock()
			s.busy(c)
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.session(ctx, c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
	ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("peer: accept: %w", err)
}

// busy refuses c: the server serves MaxSessions connections already.
func (s *Server) busy(c net.Conn) {
	fmt.Fprintf(s.cfg.Log, "kvtier serve: %s: refused: %d sessions open\n", c.RemoteAddr(), s.cfg.MaxSessions)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	WriteFrame(c, Welcome{Error: fmt.Sprintf("server busy: it serves %d connections at once (kvtier serve --max-sessions); try again later", s.cfg.MaxSessions)})
	c.Close()
}

// session runs one client connection: handshake, then the transport,
// then the undoing of what it wrote without committing.
func (s *Server) session(ctx context.Context, c net.Conn) {
	h, ok := s.hello(c)
	if !ok {
		return
	}
	w := Welcome{PoolBytes: s.cfg.Pool.Size(), Seed: s.cfg.Pool.Seed(), Mem: s.cfg.Pool.Mem(), Transport: h.Transport,
		Writable: h.Write && s.cfg.Writable}
	w.Commits = w.Writable
	switch {
	case h.Write && !s.cfg.Writable:
		w.Error = "this peer's pool is read-only: start kvtier serve with --writable to accept stores"
	case h.Transport == Verbs && s.cfg.Transport != Verbs:
		w.Error = "this peer serves transport tcp only (start it with --transport verbs)"
	case h.Transport != TCP && h.Transport != Verbs:
		w.Error = fmt.Sprintf("unknown transport %q (want tcp or verbs)", h.Transport)
	}
	if w.Error != "" {
		WriteFrame(c, w)
		return
	}
	var dirty regionSet
	var err error
	what := "verbs session"
	if h.Transport == TCP {
		what = "session ended"
		if err = WriteFrame(c, w); err != nil {
			return
		}
		err = s.serveTCP(idleConn{c, s.cfg.IdleTimeout}, w.Writable, &dirty)
	} else {
		err = s.serveVerbs(ctx, c, h, w, &dirty)
	}
	if ctx.Err() == nil {
		s.ended(c, what, err, &dirty)
	}
}

// ended fills the regions a session wrote without committing (dirty)
// with the pool's pattern again, and logs how the session ended (what,
// err; io.EOF or nil: the client hung up) where that was not plain.
// For verbs it runs once the session's endpoint is closed, so no RDMA
// WRITE lands after it.
func (s *Server) ended(c net.Conn, what string, err error, dirty *regionSet) {
	var note string
	if n := len(dirty.r); n > 0 {
		rerr := s.cfg.Pool.flushRemoteWrites()
		if rerr == nil {
			rerr = s.restore(dirty.r, nil)
		}
		note = fmt.Sprintf("; the %d bytes in %d regions it wrote without a commit hold the pool's pattern again", dirty.bytes(), n)
		if rerr != nil {
			note = fmt.Sprintf("; restoring the %d regions it wrote without a commit failed: %v", n, rerr)
		}
	}
	if err == nil || errors.Is(err, io.EOF) {
		if note == "" {
			return
		}
		err = errors.New("the client hung up")
	}
	fmt.Fprintf(s.cfg.Log, "kvtier serve: %s: %s: %v%s\n", c.RemoteAddr(), what, err, note)
}

// hello reads the client's hello within the handshake timeout and
// checks its token; a refused client is told why, in frames of its own
// protocol version where it speaks an older one.
func (s *Server) hello(c net.Conn) (Hello, bool) {
	var h Hello
	c.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	err := readFrame(c, &h, maxHello)
	c.SetReadDeadline(time.Time{})
	if err == nil && s.cfg.Token != "" && subtle.ConstantTimeCompare([]byte(h.Token), []byte(s.cfg.Token)) != 1 {
		err = errors.New("refused: the hello does not carry this run's token (--token or KVTIER_TOKEN)")
	}
	if err == nil {
		return h, true
	}
	fmt.Fprintf(s.cfg.Log, "kvtier serve: %s: refused: %v\n", c.RemoteAddr(), err)
	// Tell a client that speaks the frame format why, when we can.
	ver := Version
	if ve, ok := err.(*VersionError); ok && ve.Got >= minVersion && ve.Got < Version {
		ver = ve.Got
	}
	writeFrameVersion(c, ver, Welcome{Error: err.Error()})
	return h, false
}

// serveTCP answers request batches until the client closes. A request is
// a count n then n (offset, length) pairs, big-endian u64; the answer is a
// status byte, a message length and message, then on success the bytes of
// every chunk in order. A request outside the pool is answered with an
// error and the session goes on. A write request (writeFlag in the count,
// in a writable session) carries the bytes of every chunk after its
// pairs and is answered with a status alone, once they are in the pool; a
// write that cannot be taken ends the session, whose stream then holds
// bytes nobody reads. The regions written go into dirty until a write
// request without chunks commits them.
func (s *Server) serveTCP(c idleConn, writable bool, dirty *regionSet) error {
	r := bufio.NewReaderSize(c, 64<<10)
	var list []Chunk
	var stage []byte
	for {
		var err error
		var write bool
		list, write, err = s.readBatch(c, r, list[:0])
		if err != nil {
			return err
		}
		if write {
			if stage, err = s.takeWrite(c, r, list, writable, dirty, stage); err != nil {
				return err
			}
			continue
		}
		h := s.cfg.Pool.Host()
		bad := s.outside(list, "read")
		if bad == "" && h == nil {
			// The device reads the pool: RDMA WRITEs into it first.
			if err := s.cfg.Pool.flushRemoteWrites(); err != nil {
				bad = err.Error()
			}
		}
		if bad != "" {
			if err := writeStatus(c, statusErr, bad); err != nil {
				return err
			}
			continue
		}
		if err := writeStatus(c, statusOK, ""); err != nil {
			return err
		}
		if h != nil {
			err = c.writeChunks(h, list)
		} else {
			stage, err = s.stageChunks(c, stage, list)
		}
		if err != nil {
			return err
		}
	}
}

// readBatch reads one request into list (reused), growing it as pairs
// arrive so a client pays for what it sent, and says whether it is a
// write.
func (s *Server) readBatch(c net.Conn, r *bufio.Reader, list []Chunk) ([]Chunk, bool, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return list, false, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	write := n&writeFlag != 0
	n &^= writeFlag
	if n > maxBatch {
		writeStatus(c, statusErr, fmt.Sprintf("batch of %d chunks exceeds %d", n, maxBatch))
		return list, write, fmt.Errorf("batch of %d chunks", n)
	}
	for range n {
		var pair [16]byte
		if _, err := io.ReadFull(r, pair[:]); err != nil {
			return list, write, err
		}
		list = append(list, Chunk{Src: int64(binary.BigEndian.Uint64(pair[:])), Len: int64(binary.BigEndian.Uint64(pair[8:]))})
	}
	return list, write, nil
}

// takeWrite reads the bytes of a write request's chunks into the pool
// (through stage, grown to writeGroup once, for a device pool), notes
// their regions in dirty and answers it; a request without chunks
// commits what dirty holds instead. A write the session may not make,
// or outside the pool, is refused and ends the session. A write whose
// bytes stop coming (the writer went, or idled out) ends it too, and
// the session's end fills its regions with the pattern again.
func (s *Server) takeWrite(c idleConn, r *bufio.Reader, list []Chunk, writable bool, dirty *regionSet, stage []byte) ([]byte, error) {
	bad := s.outside(list, "write")
	if !writable {
		bad = "this session may not write: the peer was not started with --writable, or the hello did not ask to write"
	}
	if bad != "" {
		writeStatus(c, statusErr, bad)
		return stage, errors.New("refused a write: " + bad)
	}
	if len(list) == 0 {
		dirty.r = dirty.r[:0]
		return stage, writeStatus(c, statusOK, "")
	}
	dirty.add(list, s.cfg.Pool.Size())
	stage, got, err := s.receive(r, list, stage)
	var perr *poolError
	switch {
	case errors.As(err, &perr):
		writeStatus(c, statusErr, err.Error())
		return stage, err
	case err != nil:
		return stage, fmt.Errorf("a write ended after %d bytes (%v)", got, err)
	}
	return stage, writeStatus(c, statusOK, "")
}

// A poolError is a write into the pool that failed on this side.
type poolError struct{ err error }

func (e *poolError) Error() string { return fmt.Sprintf("write pool: %v", e.err) }
func (e *poolError) Unwrap() error { return e.err }

// receive reads the bytes of list's chunks from r into the pool and
// returns stage and how many bytes it took.
func (s *Server) receive(r *bufio.Reader, list []Chunk, stage []byte) ([]byte, int64, error) {
	pool, got := s.cfg.Pool, int64(0)
	for _, ch := range list {
		if h := pool.Host(); h != nil {
			n, err := io.ReadFull(r, h[ch.Src:ch.Src+ch.Len])
			if got += int64(n); err != nil {
				return stage, got, err
			}
			continue
		}
		for done := int64(0); done < ch.Len; {
			k := min(ch.Len-done, writeGroup)
			stage = grow(stage, k)
			if _, err := io.ReadFull(r, stage[:k]); err != nil {
				return stage, got, err
			}
			if _, err := pool.Buffer().WriteAt(stage[:k], ch.Src+done); err != nil {
				return stage, got, &poolError{err}
			}
			done, got = done+k, got+k
		}
	}
	return stage, got, nil
}

// restore fills every chunk of list with the pool's pattern again
// (through stage for a device pool).
func (s *Server) restore(list []Chunk, stage []byte) error {
	pool := s.cfg.Pool
	for _, ch := range list {
		if h := pool.Host(); h != nil {
			pattern.Fill(h[ch.Src:ch.Src+ch.Len], pool.Seed(), ch.Src)
			continue
		}
		for done := int64(0); done < ch.Len; {
			k := min(ch.Len-done, writeGroup)
			stage = grow(stage, k)
			pattern.Fill(stage[:k], pool.Seed(), ch.Src+done)
			if _, err := pool.Buffer().WriteAt(stage[:k], ch.Src+done); err != nil {
				return err
			}
			done += k
		}
	}
	return nil
}

// grow returns stage, made writeGroup bytes long when it holds fewer
// than k.
func grow(stage []byte, k int64) []byte {
	if int64(len(stage)) < k {
		return make([]byte, writeGroup)
	}
	return stage
}

// outside says why a read or write (what) of list falls outside the
// pool, "" if none.
func (s *Server) outside(list []Chunk, what string) string {
	pool := s.cfg.Pool
	for _, ch := range list {
		if !pool.contains(ch.Src, ch.Len) {
			return fmt.Sprintf("%s of %d bytes at offset %d is outside the pool of %d bytes", what, ch.Len, ch.Src, pool.Size())
		}
	}
	return ""
}

// stageChunks writes the chunks of a device pool through the host
// buffer stage (grown to 4 MiB once) and returns it.
func (s *Server) stageChunks(c idleConn, stage []byte, list []Chunk) ([]byte, error) {
	for _, ch := range list {
		for done := int64(0); done < ch.Len; {
			k := min(ch.Len-done, writeGroup)
			stage = grow(stage, k)
			if _, err := s.cfg.Pool.Buffer().ReadAt(stage[:k], ch.Src+done); err != nil {
				return stage, fmt.Errorf("read pool: %w", err)
			}
			if _, err := c.Write(stage[:k]); err != nil {
				return stage, err
			}
			done += k
		}
	}
	return stage, nil
}

// An idleConn is a session's connection with its idle timeout: each
// read, and each write of at most writeGroup bytes, must make progress
// within it (0: no timeout).
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c idleConn) extend(read bool) {
	if c.idle <= 0 {
		return
	}
	if read {
		c.SetReadDeadline(time.Now().Add(c.idle))
	} else {
		c.SetWriteDeadline(time.Now().Add(c.idle))
	}
}

func (c idleConn) Read(p []byte) (int, error) {
	c.extend(true)
	return c.Conn.Read(p)
}

func (c idleConn) Write(p []byte) (int, error) {
	c.extend(false)
	return c.Conn.Write(p)
}

// writeChunks writes the bytes of list from host memory h, gathered into
// writes of at most writeGroup bytes, each within the idle timeout.
func (c idleConn) writeChunks(h []byte, list []Chunk) error {
	var bufs net.Buffers
	var n int64
	flush := func() error {
		c.extend(false)
		_, err := bufs.WriteTo(c.Conn)
		bufs, n = bufs[:0], 0
		return err
	}
	for _, ch := range list {
		for off := ch.Src; off < ch.Src+ch.Len; {
			k := min(ch.Src+ch.Len-off, writeGroup-n)
			bufs = append(bufs, h[off:off+k])
			off, n = off+k, n+k
			if n == writeGroup {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if n > 0 {
		return flush()
	}
	return nil
}

func writeStatus(w io.Writer, status byte, msg string) error {
	b := make([]byte, 0, 5+len(msg))
	b = append(b, status)
	b = binary.BigEndian.AppendUint32(b, uint32(len(msg)))
	b = append(b, msg...)
	_, err := w.Write(b)
	return err
}
