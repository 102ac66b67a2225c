package vllmsim

import (
	"context"
	"net/http"
)

// A Fleet is the embedded simulators one command starts (a probe's
// consumer and producer, MB1's measured and control instances), closed
// together.
type Fleet []*Server

// Start starts a simulator of c on a free loopback port, or on the
// in-memory network ctx carries (WithNet), and returns its base URL.
func (f *Fleet) Start(ctx context.Context, c Config) (string, error) {
	if n := NetOf(ctx); n != nil {
		s, url, err := n.Start(c, "")
		if err == nil {
			*f = append(*f, s)
		}
		return url, err
	}
	s, err := New(c)
	if err != nil {
		return "", err
	}
	*f = append(*f, s)
	return s.Start(ctx, "127.0.0.1:0")
}

type netKey struct{}

// WithNet returns a copy of ctx under which a Fleet starts its
// simulators on n instead of loopback sockets, so that a command that
// starts embedded simulators runs, in a test under testing/synctest, on
// the virtual clock.
func WithNet(ctx context.Context, n *MemNet) context.Context {
	return context.WithValue(ctx, netKey{}, n)
}

// NetOf returns the in-memory network ctx carries; nil when none.
func NetOf(ctx context.Context) *MemNet {
	n, _ := ctx.Value(netKey{}).(*MemNet)
	return n
}

// ClientOf returns the HTTP client that reaches the simulators a Fleet
// starts under ctx: the in-memory network's, or nil (a client of one's
// own) for sockets.
func ClientOf(ctx context.Context) *http.Client {
	if n := NetOf(ctx); n != nil {
		return n.Client()
	}
	return nil
}

// Close closes every simulator started.
func (f *Fleet) Close() {
	for _, s := range *f {
		s.Close()
	}
}
