package vllmsim

import "context"

// A Fleet is the embedded simulators one command starts (a probe's
// consumer and producer, MB1's measured and control instances), closed
// together.
type Fleet []*Server

// Start starts a simulator of c on a free loopback port and returns its
// base URL.
func (f *Fleet) Start(ctx context.Context, c Config) (string, error) {
	s, err := New(c)
	if err != nil {
		return "", err
	}
	*f = append(*f, s)
	return s.Start(ctx, "127.0.0.1:0")
}

// Close closes every simulator started.
func (f *Fleet) Close() {
	for _, s := range *f {
		s.Close()
	}
}
