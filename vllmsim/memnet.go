package vllmsim

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// A MemNet is an in-memory network for simulated servers and their
// clients in one process: connections are net.Pipe pairs, no socket is
// opened. Under testing/synctest, where time is virtual, a whole run of
// probes against simulated servers then takes no real time beyond the
// computing it does. The zero value is ready to use.
type MemNet struct {
	mu        sync.Mutex
	listeners map[string]*memListener
	client    *http.Client
	others    []*http.Server // handlers that are not simulators
}

// Serve serves h on host (a name such as "producer"; "" picks one,
// sim-N) in the network and returns its base URL, http://host. A
// simulator stops serving when it closes, any other handler when the
// network closes.
func (n *MemNet) Serve(h http.Handler, host string) (string, error) {
	n.mu.Lock()
	if n.listeners == nil {
		n.listeners = map[string]*memListener{}
	}
	if host == "" {
		host = fmt.Sprintf("sim-%d", len(n.listeners)+1)
	}
	if _, dup := n.listeners[host]; dup {
		n.mu.Unlock()
		return "", fmt.Errorf("sim: memnet: host %q is taken", host)
	}
	l := &memListener{host: host, conns: make(chan net.Conn), done: make(chan struct{})}
	n.listeners[host] = l
	if s, ok := h.(*Server); ok {
		n.mu.Unlock()
		s.serveOn(l)
		return "http://" + host, nil
	}
	hs := &http.Server{Handler: h}
	n.others = append(n.others, hs)
	n.mu.Unlock()
	go hs.Serve(l)
	return "http://" + host, nil
}

// Start starts a simulator of cfg serving on host in the network, with
// the network's client for its pulls from a producer, and returns it and
// its base URL. The caller closes it.
func (n *MemNet) Start(cfg Config, host string) (*Server, string, error) {
	cfg.Client = n.Client()
	s, err := New(cfg)
	if err != nil {
		return nil, "", err
	}
	url, err := n.Serve(s, host)
	if err != nil {
		s.Close()
		return nil, "", err
	}
	return s, url, nil
}

// Client returns the network's HTTP client: it reaches the servers of
// the network by their host names and nothing else.
func (n *MemNet) Client() *http.Client {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.client == nil {
		n.client = &http.Client{Transport: &http.Transport{DialContext: n.dial, DisableCompression: true}}
	}
	return n.client
}

// Close drops the client's idle connections and stops the handlers that
// are not simulators (those are closed by their own Close).
func (n *MemNet) Close() {
	n.mu.Lock()
	c, others := n.client, n.others
	n.others = nil
	n.mu.Unlock()
	if c != nil {
		c.CloseIdleConnections()
	}
	for _, hs := range others {
		hs.Close()
	}
}

func (n *MemNet) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	n.mu.Lock()
	l := n.listeners[host]
	n.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("memnet: no server %q", host)
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	return nil, fmt.Errorf("memnet: %s: connection refused", host)
}

// memListener hands the server ends of pipes to an http.Server.
type memListener struct {
	host  string
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr(l.host) }

type memAddr string

func (a memAddr) Network() string { return "memnet" }
func (a memAddr) String() string  { return string(a) + ":80" }
