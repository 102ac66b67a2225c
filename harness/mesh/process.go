package mesh

import (
	"context"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/peer/peerflag"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/system/meminfo"
	"github.com/kvtier/kvtier/tiers/tierflag"
	"github.com/kvtier/kvtier/xfer"
)

// A process is what one rank of kvtier mesh holds open: its side of the
// control connection, its pool and its server, its backends.
type process struct {
	coord  *Coordinator // rank 0
	rank   *Rank        // the others
	self   Member
	worker *Worker
	closes []func()
}

func (r *process) close() {
	for _, closeFn := range slices.Backward(r.closes) {
		closeFn()
	}
}

// openProcess meets the coordinator (rank 0: binds it), opens this
// rank's backends and pool and serves it on the address the coordinator
// is reached from. On failure it has said why in one line and returns
// the exit status.
func openProcess(ctx context.Context, c *cli.Call, p plan) (*process, int) {
	r := &process{}
	var ip net.IP
	if p.launch.Rank == 0 {
		co, err := Listen(p.cfg, p.launch.Coordinator)
		if err != nil {
			return nil, c.UsageErr(option.Wrap("coordinator", err))
		}
		r.coord, ip = co, co.Addr().(*net.TCPAddr).IP
		r.closes = append(r.closes, func() { co.Close(nil) })
	} else {
		rk, lip, err := DialCoordinator(ctx, p.cfg, p.launch.Coordinator)
		if err != nil {
			return nil, rankExit(ctx, c, p.launch.Rank, err, cli.ExitUsage)
		}
		r.rank, ip = rk, lip
		r.closes = append(r.closes, func() { rk.Close() })
	}
	if err := r.open(ctx, c, p, ip); err != nil {
		r.close()
		return nil, c.UsageErr(err)
	}
	return r, cli.ExitOK
}

// rankExit says how rank ended (err) and returns its exit status: 130
// when interrupted, else code.
func rankExit(ctx context.Context, c *cli.Call, rank int, err error, code int) int {
	if ctx.Err() != nil {
		c.Logf("rank %d interrupted", rank)
		return cli.ExitInterrupted
	}
	c.Logf("rank %d: %v", rank, err)
	return code
}

// open collects this rank's facts, picks its GPU and NIC, opens its
// backends and serves its pool.
func (r *process) open(ctx context.Context, c *cli.Call, p plan, ip net.IP) error {
	man := c.Manifest(Suite.Name)
	host, _ := os.Hostname()
	self := Member{Launch: p.launch, Host: host, Transport: p.opts.Transport, Mem: p.mem, GPU: -1, Manifest: man}
	gpu := p.gpu
	if gpu < 0 {
		gpu = p.launch.LocalRank
	}
	for _, g := range man.GPUs {
		if g.CUDAOrdinal == gpu {
			self.GPU, self.GPUBus = gpu, g.BusID
		}
	}
	rcfg, err := r.pickNIC(c, &self, p, ip)
	if err != nil {
		return err
	}
	bf := tierflag.BackendFlags{GPU: gpu, NUMA: -1}
	be, done, err := xfer.OpenBackends(ctx, p.opts, bf.Config(c.Stderr, tierflag.Libraries(c.Getenv)))
	if err != nil {
		return err
	}
	r.closes = append(r.closes, done)
	be.RDMA = rcfg
	r.worker = &Worker{Options: p.opts, Backends: be, BackendConfig: bf.Config(c.Stderr, tierflag.Libraries(c.Getenv)), Log: c.Stderr}
	r.closes = append(r.closes, func() { r.worker.Close() })
	if err := r.servePool(ctx, c, p, &self, gpu, ip, rcfg); err != nil {
		return err
	}
	r.self = self
	return nil
}

// pickNIC chooses the rank's NIC: for verbs the RDMA port nearest its
// GPU (or --rdma-device), checked to open; for tcp the interface of ip.
func (r *process) pickNIC(c *cli.Call, self *Member, p plan, ip net.IP) (rdma.Config, error) {
	s := p.opts.ClientSettings
	if s.RDMADevice == rdma.AutoDevice {
		s.RDMADevice = ""
	}
	s.Library = tierflag.Libraries(c.Getenv).IBVerbs
	rcfg := s.RDMA("/")
	if p.opts.Transport != peer.Verbs {
		self.NIC = InterfaceOf(ip)
		return rcfg, nil
	}
	dist := func(a, b string) string { return system.Distance("/", a, b) }
	nic, d, ok := PickNIC(self.Manifest.NICs, s.RDMADevice, self.GPUBus, dist)
	if !ok {
		return rcfg, peerflag.VerbsProblem(rdma.ErrNoDevice)
	}
	rcfg.Device, rcfg.Port = nic.Name, nic.Port
	self.NIC, self.NICRate, self.GPUNIC = nic.Name, nic.RateGbps, d
	return rcfg, peerflag.VerbsReady(rcfg, c.Stderr)
}

// servePool allocates the rank's pool and serves it, with the run token,
// until the rank closes.
func (r *process) servePool(ctx context.Context, c *cli.Call, p plan, self *Member, gpu int, ip net.IP, rcfg rdma.Config) error {
	size := p.pool
	if size == 0 {
		size = poolBytes(p.opts, p.launch.LocalSize)
	}
	seed := p.opts.Seed*1_000_003 + uint64(p.launch.Rank) + 1 // each rank's pool its own pattern
	bf := tierflag.BackendFlags{Name: "cuda", GPU: gpu, NUMA: -1}
	pool, _, closePool, err := tierflag.Pool{Mem: p.mem, Size: size, Seed: seed, Backend: bf.Config(c.Stderr, tierflag.Libraries(c.Getenv))}.Open(ctx)
	if err != nil {
		return option.Wrap("pool", err)
	}
	r.closes = append(r.closes, closePool)
	addr := net.JoinHostPort(ip.String(), "0")
	if p.listen != "" {
		if addr = p.listen; !strings.Contains(p.listen, ":") {
			addr = net.JoinHostPort(p.listen, "0")
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return option.Wrap("listen", err)
	}
	sctx, stop := context.WithCancel(context.Background())
	srv := peer.NewServer(peer.ServerConfig{Pool: pool, Transport: p.opts.Transport, RDMA: rcfg, Log: c.Stderr, Token: p.opts.Token, IdleTimeout: p.opts.IdleTimeout,
		Writable: p.opts.Stores()})
	served := make(chan struct{})
	go func() { srv.Serve(sctx, ln); close(served) }()
	r.closes = append(r.closes, func() { stop(); <-served })
	self.Addr, self.PoolBytes = ln.Addr().String(), pool.Size()
	return nil
}

// poolBytes sizes a rank's pool: the largest size and a quarter, whole
// blocks, within 40% of free memory shared by the node's ranks.
func poolBytes(o xfer.Options, local int) int64 {
	var want int64
	for _, s := range o.Sizes {
		want = max(want, s+s/4)
	}
	if avail, err := meminfo.Available("/"); err == nil {
		want = min(want, avail*2/5/int64(max(local, 1)))
	}
	bb := o.Geometry.BlockBytes()
	return max(bb, (want+bb-1)/bb*bb)
}

// coordinate is rank 0: rendezvous, then the run into the results
// directory.
func (r *process) coordinate(ctx context.Context, c *cli.Call, p plan) int {
	if _, err := r.coord.Rendezvous(ctx, r.self); err != nil {
		return rankExit(ctx, c, 0, err, cli.ExitUsage)
	}
	c.Logf("all %d ranks joined", p.launch.Size)
	return cli.SuiteRun{Call: c, Suite: Suite, Out: p.out, Plots: true,
		Run: func(ctx context.Context, out *harness.Output) error {
			return r.coord.Run(ctx, out, r.worker, p.pattern, p.peerCopy)
		}}.Exec(ctx)
}

// serve is every other rank: join, then the coordinator's tasks.
func (r *process) serve(ctx context.Context, c *cli.Call, p plan) int {
	rank := p.launch.Rank
	if _, err := r.rank.Join(ctx, r.self); err != nil {
		return rankExit(ctx, c, rank, err, cli.ExitUsage)
	}
	if err := r.rank.Serve(ctx, r.worker); err != nil {
		return rankExit(ctx, c, rank, err, cli.ExitFail)
	}
	c.Logf("rank %d: done", rank)
	return cli.ExitOK
}
