package mesh

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// A Config is what every rank of a mesh shares.
type Config struct {
	Token             string        // the run token: connections without it are refused
	RendezvousTimeout time.Duration // how long ranks may take to meet
	IdleTimeout       time.Duration // a rank or pool silent this long is gone
	// Settings are the options every rank must agree on (sizes, layouts,
	// transport, ...); a rank whose settings differ is refused.
	Settings map[string]string
	Log      io.Writer
}

// joinTimeout bounds the wait for a connection's join message.
const joinTimeout = 10 * time.Second

// A rankLink is the coordinator's connection to one rank.
type rankLink struct {
	*link
	member  Member
	events  chan message
	gone    chan struct{}
	goneErr error
}

// read forwards the rank's messages to events until the link fails,
// then records why and closes gone.
func (rl *rankLink) read() {
	for {
		m, err := rl.recv()
		if err != nil {
			if errors.Is(err, io.EOF) || strings.Contains(err.Error(), "closed before") {
				err = errors.New("its control connection closed (the process ended)")
			} else if isTimeout(err) {
				err = fmt.Errorf("silent for %s (idle timeout)", rl.idle)
			}
			rl.goneErr = err
			close(rl.gone)
			return
		}
		rl.events <- m
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A Coordinator is rank 0's side of the mesh: it admits the other ranks,
// schedules the pairs and gathers the rows.
type Coordinator struct {
	cfg     Config
	ln      net.Listener
	self    Member
	size    int
	mu      sync.Mutex
	links   map[int]*rankLink
	started bool
	arrived chan struct{}
	members []Member
	stop    chan struct{}
}

// Listen binds the coordinator's address, which must be one of this
// host's: the coordinator listens nowhere else.
func Listen(cfg Config, addr string) (*Coordinator, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("%s: cannot resolve %s: %v", addr, host, err)
	}
	var ln net.Listener
	for _, ip := range ips {
		if ln, err = net.Listen("tcp", net.JoinHostPort(ip.String(), port)); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: rank 0 cannot listen there (is rank 0 on that host?): %w", addr, err)
	}
	return &Coordinator{cfg: cfg, ln: ln, links: map[int]*rankLink{}, arrived: make(chan struct{}, 1), stop: make(chan struct{})}, nil
}

// Addr is the address the coordinator listens on.
func (c *Coordinator) Addr() net.Addr { return c.ln.Addr() }

// Rendezvous admits ranks until all size of them have joined or the
// rendezvous timeout passes; then every rank learns the members, or the
// one line naming the ranks that are missing (also the error returned).
func (c *Coordinator) Rendezvous(ctx context.Context, self Member) ([]Member, error) {
	c.self, c.size = self, self.Size
	go c.accept()
	deadline := time.NewTimer(c.cfg.RendezvousTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		n := len(c.links)
		c.mu.Unlock()
		if n == c.size-1 {
			return c.start()
		}
		select {
		case <-c.arrived:
		case <-ctx.Done():
			c.failAll("rendezvous interrupted at rank 0")
			return nil, ctx.Err()
		case <-deadline.C:
			msg := c.missing()
			c.failAll(msg)
			return nil, errors.New(msg)
		}
	}
}

// missing is the line that names the ranks that did not join.
func (c *Coordinator) missing() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var miss []string
	for r := 1; r < c.size; r++ {
		if c.links[r] == nil {
			miss = append(miss, fmt.Sprint(r))
		}
	}
	return fmt.Sprintf("rendezvous: rank(s) %s of %d did not join within %s (coordinator %s)",
		strings.Join(miss, ", "), c.size, c.cfg.RendezvousTimeout, c.ln.Addr())
}

// failAll tells every joined rank the run cannot go on.
func (c *Coordinator) failAll(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started = true
	for _, rl := range c.links {
		rl.send(message{Kind: kindFail, Error: msg})
		rl.c.Close()
	}
}

// accept admits connections until the listener closes.
func (c *Coordinator) accept() {
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		go c.admit(conn)
	}
}

// admit reads a connection's join and registers the rank, or refuses it
// with the reason.
func (c *Coordinator) admit(conn net.Conn) {
	l := &link{c: conn, idle: joinTimeout}
	m, err := l.recv()
	if err != nil {
		conn.Close()
		return
	}
	rl := &rankLink{link: l, events: make(chan message, 64), gone: make(chan struct{})}
	if why := c.register(m, rl); why != "" {
		fmt.Fprintf(c.cfg.Log, "kvtier mesh: coordinator: refused %s: %s\n", conn.RemoteAddr(), why)
		l.send(message{Kind: kindRefused, Error: why})
		conn.Close()
		return
	}
	select {
	case c.arrived <- struct{}{}:
	default:
	}
}

// register checks a join and adds its rank; the reason when refused.
func (c *Coordinator) register(m message, rl *rankLink) string {
	if subtle.ConstantTimeCompare([]byte(m.Token), []byte(c.cfg.Token)) != 1 {
		return "the join does not carry this run's token (--token or KVTIER_TOKEN)"
	}
	if m.Kind != kindJoin || m.Member == nil {
		return fmt.Sprintf("expected a join, got %q", m.Kind)
	}
	mb := *m.Member
	if mb.Size != c.size || mb.Rank < 1 || mb.Rank >= c.size {
		return fmt.Sprintf("rank %d of %d does not fit this mesh of %d ranks", mb.Rank, mb.Size, c.size)
	}
	if !maps.Equal(m.Settings, c.cfg.Settings) {
		return fmt.Sprintf("rank %d's options differ from rank 0's: %s", mb.Rank, settingsDiff(m.Settings, c.cfg.Settings))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.started:
		return "the mesh has already started or failed"
	case c.links[mb.Rank] != nil:
		return fmt.Sprintf("rank %d joined twice (from %s and %s)", mb.Rank, c.links[mb.Rank].member.Addr, mb.Addr)
	}
	rl.member = mb
	c.links[mb.Rank] = rl
	return ""
}

// settingsDiff names the settings that differ.
func settingsDiff(a, b map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("%s=%q, rank 0 has %q", k, a[k], b[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if _, ok := b[k]; !ok {
			out = append(out, fmt.Sprintf("%s=%q unknown to rank 0", k, a[k]))
		}
	}
	return strings.Join(out, "; ")
}

// start tells every rank the members and starts reading from them.
func (c *Coordinator) start() ([]Member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started = true
	c.members = make([]Member, c.size)
	c.members[0] = c.self
	for r, rl := range c.links {
		c.members[r] = rl.member
	}
	wire := make([]Member, c.size)
	for i, m := range c.members {
		m.Manifest = nil
		wire[i] = m
	}
	for _, rl := range c.links {
		rl.idle = c.cfg.IdleTimeout
		if err := rl.send(message{Kind: kindStart, Members: wire, Settings: c.cfg.Settings}); err != nil {
			rl.goneErr = err
			close(rl.gone)
			continue
		}
		go rl.read()
		go rl.beat(c.stop)
	}
	return c.members, nil
}

// Close tells the ranks the run is over (bye, or fail with why when not
// nil) and closes every connection.
func (c *Coordinator) Close(why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.stop:
		return
	default:
		close(c.stop)
	}
	c.started = true
	c.ln.Close()
	m := message{Kind: kindBye}
	if why != nil {
		m = message{Kind: kindFail, Error: "rank 0: " + why.Error()}
	}
	for _, rl := range c.links {
		rl.send(m)
		rl.c.Close()
	}
}
