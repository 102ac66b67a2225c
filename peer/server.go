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

	"github.com/kvtier/kvtier/rdma"
)

// Wire limits of the TCP data transport.
const (
	// maxBatch is the most chunks one request may carry.
	maxBatch = 1 << 16
	// Response statuses.
	statusOK  = 0
	statusErr = 1
)

// A ServerConfig says what a server serves.
type ServerConfig struct {
	Pool *Pool
	// Transport is what the server offers: "tcp", or "verbs" (which serves
	// TCP clients too).
	Transport string
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
}

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

// session runs one client connection: handshake, then the transport.
func (s *Server) session(ctx context.Context, c net.Conn) {
	h, ok := s.hello(c)
	if !ok {
		return
	}
	w := Welcome{PoolBytes: s.cfg.Pool.Size(), Seed: s.cfg.Pool.Seed(), Mem: s.cfg.Pool.Mem(), Transport: h.Transport}
	switch h.Transport {
	case TCP:
		if err := WriteFrame(c, w); err != nil {
			return
		}
		if err := s.serveTCP(c); err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
			fmt.Fprintf(s.cfg.Log, "kvtier serve: %s: session ended: %v\n", c.RemoteAddr(), err)
		}
	case Verbs:
		if s.cfg.Transport != Verbs {
			w.Error = "this peer serves transport tcp only (start it with --transport verbs)"
			WriteFrame(c, w)
			return
		}
		if err := s.serveVerbs(ctx, c, h, w); err != nil && ctx.Err() == nil {
			fmt.Fprintf(s.cfg.Log, "kvtier serve: %s: verbs session: %v\n", c.RemoteAddr(), err)
		}
	default:
		w.Error = fmt.Sprintf("unknown transport %q (want tcp or verbs)", h.Transport)
		WriteFrame(c, w)
	}
}

// hello reads the client's hello within the handshake timeout and
// checks its token; a refused client is told why, in frames of its own
// protocol version where it speaks an older one.
func (s *Server) hello(c net.Conn) (Hello, bool) {
	var h Hello
	c.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	err := ReadFrame(c, &h)
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
// error and the session goes on.
func (s *Server) serveTCP(c net.Conn) error {
	r := bufio.NewReaderSize(c, 64<<10)
	pool := s.cfg.Pool
	var stage []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxBatch {
			writeStatus(c, statusErr, fmt.Sprintf("batch of %d chunks exceeds %d", n, maxBatch))
			return fmt.Errorf("batch of %d chunks", n)
		}
		list := make([]Chunk, n)
		var bad string
		for i := range list {
			var pair [16]byte
			if _, err := io.ReadFull(r, pair[:]); err != nil {
				return err
			}
			off, l := int64(binary.BigEndian.Uint64(pair[:])), int64(binary.BigEndian.Uint64(pair[8:]))
			list[i] = Chunk{Src: off, Len: l}
			if bad == "" && !pool.contains(off, l) {
				bad = fmt.Sprintf("read of %d bytes at offset %d is outside the pool of %d bytes", l, off, pool.Size())
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
		if h := pool.Host(); h != nil {
			bufs := make(net.Buffers, 0, len(list))
			for _, ch := range list {
				bufs = append(bufs, h[ch.Src:ch.Src+ch.Len])
			}
			if _, err := bufs.WriteTo(c); err != nil {
				return err
			}
			continue
		}
		// Device pool: stage through host memory.
		for _, ch := range list {
			for done := int64(0); done < ch.Len; {
				k := min(ch.Len-done, 4<<20)
				if int64(len(stage)) < k {
					stage = make([]byte, 4<<20)
				}
				if _, err := pool.Buffer().ReadAt(stage[:k], ch.Src+done); err != nil {
					return fmt.Errorf("read pool: %w", err)
				}
				if _, err := c.Write(stage[:k]); err != nil {
					return err
				}
				done += k
			}
		}
	}
}

func writeStatus(w io.Writer, status byte, msg string) error {
	b := make([]byte, 0, 5+len(msg))
	b = append(b, status)
	b = binary.BigEndian.AppendUint32(b, uint32(len(msg)))
	b = append(b, msg...)
	_, err := w.Write(b)
	return err
}
