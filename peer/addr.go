package peer

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// Paths a transfer can take.
const (
	PathLoopback = "loopback" // an embedded peer in the same process
	PathIntra    = "intra"    // another process on this host
	PathInter    = "inter"    // another host (or network namespace)
)

// PathTo says whether addr (HOST:PORT) is on this host (intra: a loopback
// address or one of this network namespace's interface addresses) or not
// (inter). An address that does not resolve counts as inter.
func PathTo(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return PathInter
	}
	local, _ := net.InterfaceAddrs()
	for _, ip := range ips {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return PathIntra
		}
		for _, a := range local {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return PathIntra
			}
		}
	}
	return PathInter
}

// An Embedded is a server on a loopback port inside this process.
type Embedded struct {
	Addr   string
	Pool   *Pool
	cancel func()
	done   chan error
}

// StartEmbedded serves pool on 127.0.0.1 (an ephemeral port) until Close.
// The embedded server owns pool.
func StartEmbedded(cfg ServerConfig) (*Embedded, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := contextWithCancel()
	e := &Embedded{Addr: ln.Addr().String(), Pool: cfg.Pool, cancel: cancel, done: make(chan error, 1)}
	srv := NewServer(cfg)
	go func() { e.done <- srv.Serve(ctx, ln) }()
	return e, nil
}

// Close stops the server, waits for its sessions and frees the pool.
func (e *Embedded) Close() error {
	e.cancel()
	err := <-e.done
	if cerr := e.Pool.Close(); err == nil {
		err = cerr
	}
	return err
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// DefaultConns is --conns wherever a client reads a peer's pool (the
// sweep's remote tier, transfer, mesh): a prefix's chunks are many
// independent reads, which an engine's KV connector spreads over several
// connections or QPs; one TCP stream is bound by one core's copies and
// leaves most of a 100-400 Gb/s link idle, so a default of 1 measured
// the stream, not the path.
const DefaultConns = 4

// ConnsUsage is the help of --conns, the same in every command.
const ConnsUsage = "parallel TCP connections or RC QPs (one default in every command: why in docs/gpu-node.md, What kvtier picks by itself)"

// MaxConns bounds the parallel connections (or RC QPs) one client opens.
const MaxConns = 64

// CheckAddr says what is wrong with addr as the address of a peer: it
// must be HOST:PORT with a port from 1 to 65535.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fmt.Errorf("%q: want HOST:PORT", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: port %q is not 1 to 65535", addr, port)
	}
	return nil
}
