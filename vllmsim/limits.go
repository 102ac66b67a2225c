package vllmsim

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits of a simulated server (README "Limits"): a client cannot make it
// hold more than these, however it misbehaves.
const (
	// DefaultMaxRequests is Config.MaxRequests when unset.
	DefaultMaxRequests = 1024
	// DefaultMaxConns is Config.MaxConns when unset.
	DefaultMaxConns = 4096
	// BodyBytesPerToken sizes the largest request body: this many bytes
	// per token of max_model_len (a token id is at most 7 characters in
	// JSON, a word of the toy tokenizer a few), and at least MinBodyBytes.
	BodyBytesPerToken = 32
	// MinBodyBytes is the smallest body limit.
	MinBodyBytes = 1 << 20
	// maxHeaderBytes bounds a request's headers.
	maxHeaderBytes = 64 << 10
	// maxAnswerBytes bounds the producer's answer to a consumer's pull.
	maxAnswerBytes = 16 << 20
)

// bodyLimit is the largest request body the server reads.
func (s *Server) bodyLimit() int64 {
	return max(MinBodyBytes, int64(BodyBytesPerToken)*int64(s.cfg.MaxModelLen))
}

// readBody reads a request's body, refusing one over the body limit
// (413) or one its client does not send within the idle timeout.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	limit := s.bodyLimit()
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	rc := http.NewResponseController(w)
	if s.cfg.IdleTimeout > 0 {
		rc.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		// The deadline stays: the connection is not read again.
		w.Header().Set("Connection", "close")
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, tooLarge(limit)
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	rc.SetReadDeadline(time.Time{})
	return body, nil
}

func tooLarge(limit int64) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge,
		message: fmt.Sprintf("request body larger than %d bytes (%d bytes per token of max_model_len): refused", limit, BodyBytesPerToken)}
}

// limit admits at most MaxRequests requests at once: one more is refused
// with 503 and a JSON error, as an overloaded server would.
func (s *Server) limit(next http.Handler) http.Handler {
	sem := make(chan struct{}, s.cfg.MaxRequests)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			next.ServeHTTP(w, r)
		default:
			writeError(w, &apiError{status: http.StatusServiceUnavailable,
				message: fmt.Sprintf("the simulator serves at most %d requests at once (--limit-concurrency); try again later", s.cfg.MaxRequests)})
		}
	})
}

// busyResponse is what a connection past MaxConns reads before it is
// closed.
func busyResponse(maxConns int) []byte {
	body := fmt.Sprintf(`{"error":{"message":"the simulator holds at most %d connections (--max-conns); try again later","type":"ServiceUnavailableError","param":null,"code":503}}`, maxConns)
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\nX-Kvtier-Simulated: 1\r\n\r\n%s", len(body), body)
}

// A connLimit is a listener holding at most max connections open: one
// more is answered 503 and closed at once.
type connLimit struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open int
}

func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		full := l.open >= l.max
		if !full {
			l.open++
		}
		l.mu.Unlock()
		if !full {
			return &limitedConn{Conn: c, l: l}, nil
		}
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write(busyResponse(l.max))
		c.Close()
	}
}

// A limitedConn gives its place back once closed.
type limitedConn struct {
	net.Conn
	l    *connLimit
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
