package mesh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/kvtier/kvtier/internal/wait"
)

// A Rank is the side of a mesh every rank but 0 runs: it joins the
// coordinator, then runs the tasks it is given until the run is over.
type Rank struct {
	cfg     Config
	addr    string
	l       *link
	self    Member
	members []Member
}

// ErrFailed wraps a failure the coordinator announced (a rendezvous that
// did not complete, rank 0 interrupted): the rank has nothing to add.
var ErrFailed = errors.New("mesh failed")

// DialCoordinator connects to the coordinator at addr, retrying until
// the rendezvous timeout (rank 0 may start later than this rank), and
// returns the rank with the local address of the connection: the address
// this rank reaches the others from, where its pool should listen.
func DialCoordinator(ctx context.Context, cfg Config, addr string) (*Rank, net.IP, error) {
	deadline := time.Now().Add(cfg.RendezvousTimeout) // the rendezvous deadline, not a measurement
	var last error
	for time.Now().Before(deadline) { // until the rendezvous deadline
		d := net.Dialer{Timeout: min(2*time.Second, time.Until(deadline))} // what is left of it
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			ip := c.LocalAddr().(*net.TCPAddr).IP
			return &Rank{cfg: cfg, addr: addr, l: &link{c: c, idle: cfg.IdleTimeout}}, ip, nil
		}
		last = err
		if err := wait.For(ctx, 200*time.Millisecond); err != nil {
			return nil, nil, err
		}
	}
	return nil, nil, fmt.Errorf("rendezvous: rank(s) 0 did not answer within %s (no coordinator at %s: %v)", cfg.RendezvousTimeout, addr, last)
}

// Join sends this rank's member record and waits until every rank has
// joined (the members) or the coordinator says why not.
func (r *Rank) Join(ctx context.Context, self Member) ([]Member, error) {
	r.self = self
	if err := r.l.send(message{Kind: kindJoin, Token: r.cfg.Token, Member: &self, Settings: r.cfg.Settings}); err != nil {
		return nil, fmt.Errorf("rendezvous: coordinator %s: %w", r.addr, err)
	}
	r.l.idle = r.cfg.RendezvousTimeout + joinTimeout
	stop := context.AfterFunc(ctx, func() { r.l.c.Close() })
	defer stop()
	m, err := r.l.recv()
	r.l.idle = r.cfg.IdleTimeout
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("rendezvous: coordinator %s said nothing within %s: %v", r.addr, r.cfg.RendezvousTimeout+joinTimeout, err)
	case m.Kind == kindRefused:
		return nil, fmt.Errorf("rendezvous: the coordinator at %s refused rank %d: %s", r.addr, self.Rank, m.Error)
	case m.Kind == kindFail:
		return nil, fmt.Errorf("%w: %s", ErrFailed, m.Error)
	case m.Kind != kindStart || len(m.Members) != self.Size:
		return nil, fmt.Errorf("rendezvous: coordinator %s sent %q with %d members", r.addr, m.Kind, len(m.Members))
	}
	r.members = m.Members
	return m.Members, nil
}

// Serve runs the coordinator's tasks until it says the run is over
// (nil), fails it (an ErrFailed), or is lost (silent for the idle
// timeout or its connection gone).
func (r *Rank) Serve(ctx context.Context, w *Worker) error {
	stop := make(chan struct{})
	defer close(stop)
	go r.l.beat(stop)
	defer context.AfterFunc(ctx, func() { r.l.c.Close() })()
	sink := rowSink{l: r.l, header: Suite.Main().Header()}
	for {
		m, err := r.l.recv()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return fmt.Errorf("lost the coordinator %s: %v", r.addr, err)
		case m.Kind == kindBye:
			return nil
		case m.Kind == kindFail:
			return fmt.Errorf("%w: %s", ErrFailed, m.Error)
		case m.Kind == kindTask && m.Task != nil:
			if err := r.task(ctx, *m.Task, w, sink); err != nil {
				return err
			}
		}
	}
}

// task runs one task and says when each configuration and the task are
// done.
func (r *Rank) task(ctx context.Context, t Task, w *Worker, sink rowSink) error {
	if t.Src < 0 || t.Src >= len(r.members) || t.Dst != r.self.Rank {
		return fmt.Errorf("coordinator sent a task %d→%d to rank %d", t.Src, t.Dst, r.self.Rank)
	}
	mark := func(k cfgKey) error {
		return r.l.send(message{Kind: kindConfig, Direction: string(k.dir), Layout: k.layout, Bytes: k.size})
	}
	if err := w.run(ctx, t, r.members[t.Src], r.self, sink, mark); err != nil {
		return err
	}
	return r.l.send(message{Kind: kindDone})
}

// Close closes the connection to the coordinator.
func (r *Rank) Close() error { return r.l.c.Close() }
