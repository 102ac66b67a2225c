package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/harness/mesh"
	"github.com/kvtier/kvtier/harness/transfer"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/system/meminfo"
	"github.com/kvtier/kvtier/tiers"
)

// meshFlags are the flags of kvtier mesh.
type meshFlags struct {
	out                outputFlags
	mb2                mb2Flags
	ov                 mesh.Overrides
	pattern, mem, pool string
	listen             string
	directions         string
	gpu                int
	peerCopy           bool
	rendezvous         string
}

// meshDefaults are MB2's defaults with a lighter sweep: a matrix has
// n(n-1) pairs.
func meshDefaults() transfer.Options {
	o := transfer.DefaultOptions()
	o.Sizes = []int64{64 << 20, 256 << 20, 1 << 30}
	o.Layouts = []string{transfer.Blockwise}
	return o
}

func (f *meshFlags) add(fs *pflag.FlagSet) {
	f.ov = mesh.NoOverrides()
	f.out.add(fs)
	f.mb2.add(fs, meshDefaults(), "transfer sizes (default 64MiB,256MiB,1GiB)")
	fs.StringVar(&f.directions, "direction", "load", directionUsage+"; load: each rank reads from the others' pools, store: it writes into them (every rank's pool then accepts writes)")
	fs.StringVar(&f.pattern, "pattern", mesh.Pairwise, "pairwise (one pair moves data at a time) or ring (every rank reads from rank+1 at once)")
	fs.StringVar(&f.mem, "mem", peer.HostMem, "pool memory of every rank: host, or gpu (device memory of the rank's GPU)")
	fs.StringVar(&f.pool, "pool", "", "pool size per rank (default: the largest size and a quarter, within free memory shared by the node's ranks)")
	fs.IntVar(&f.gpu, "gpu", -1, "CUDA device ordinal of this rank (-1: its local rank)")
	fs.StringVar(&f.listen, "listen", "", "HOST[:PORT] this rank's pool listens on (default: the address it reaches the coordinator from, any free port)")
	fs.BoolVar(&f.peerCopy, "intra-peer-copy", false, "also time intra-node pairs over the GPUs' peer path (rows path=peercopy; skipped without two GPUs in one process)")
	fs.StringVar(&f.rendezvous, "rendezvous-timeout", "60s", "how long ranks wait for each other at the start")
	addIdleTimeout(fs, &f.mb2.opts.IdleTimeout)
	fs.StringVar(&f.ov.Coordinator, "coordinator", "", "HOST:PORT of rank 0 (default: MASTER_ADDR:MASTER_PORT, else the first node of SLURM_STEP_NODELIST)")
	fs.StringVar(&f.ov.Launcher, "launcher", "", "launcher whose environment gives rank and world size: "+strings.Join(mesh.Launchers, ", ")+", or flags (default: detected)")
	fs.IntVar(&f.ov.Rank, "rank", -1, "this process's rank (default: from the launcher)")
	fs.IntVar(&f.ov.Size, "world-size", -1, "number of ranks (default: from the launcher)")
	fs.IntVar(&f.ov.LocalRank, "local-rank", -1, "rank on this node (default: from the launcher)")
	fs.StringVar(&f.ov.Node, "node", "", "name of this rank's node; ranks with the same node are intra pairs (default: the launcher's node name, else the host name)")
}

// A meshPlan is the checked input of kvtier mesh.
type meshPlan struct {
	launch   mesh.Launch
	opts     transfer.Options
	cfg      mesh.Config
	pattern  string
	mem      string
	pool     int64
	gpu      int
	listen   string
	peerCopy bool
}

// plan checks the flags and the launcher's environment, reporting every
// problem at once.
func (f *meshFlags) plan(getenv func(string) string) (meshPlan, error) {
	var errs []error
	p := meshPlan{pattern: f.pattern, mem: f.mem, gpu: f.gpu, listen: f.listen, peerCopy: f.peerCopy}
	p.opts = f.mb2.options(&errs)
	p.opts.Directions = listFlag(&errs, "direction", f.directions, parseDirection, tiers.Load)
	rdv := durationFlag(&errs, "rendezvous-timeout", f.rendezvous)
	errs = append(errs, p.opts.Validate(), f.out.check())
	if f.pattern != mesh.Pairwise && f.pattern != mesh.Ring {
		errs = append(errs, option.Errorf("pattern", "want pairwise or ring, got %q", f.pattern))
	}
	if f.mem != peer.HostMem && f.mem != peer.GPUMem {
		errs = append(errs, option.Errorf("mem", "want host or gpu, got %q", f.mem))
	}
	if f.pool != "" {
		p.pool = sizeFlag(&errs, "pool", f.pool, transfer.MaxSize)
	}
	errs = append(errs, option.Range("gpu", f.gpu, -1, maxOrdinal, "-1: the local rank"))
	if p.opts.Token == "" {
		errs = append(errs, option.Errorf("token", "no run token: set %s in the job's environment (srun passes it; mpirun -x %s) or give --token", EnvToken, EnvToken))
	}
	var err error
	p.launch, err = mesh.Detect(mesh.Env{Getenv: getenv, Hostname: os.Hostname, Expand: expandNodelist, NodeAddr: slurmNodeAddr}, f.ov)
	errs = append(errs, err)
	settings := p.opts.Settings()
	maps.Copy(settings, map[string]string{"pattern": f.pattern, "mem": f.mem, "pool": f.pool, "intra_peer_copy": fmt.Sprint(f.peerCopy),
		"world_size": fmt.Sprint(p.launch.Size), "coordinator": p.launch.Coordinator})
	p.cfg = mesh.Config{Token: p.opts.Token, RendezvousTimeout: rdv, IdleTimeout: p.opts.IdleTimeout, Settings: settings}
	return p, errors.Join(errs...)
}

// expandNodelist expands a Slurm hostlist with scontrol where it runs,
// else with kvtier's own parser.
func expandNodelist(list string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "scontrol", "show", "hostnames", list).Output()
	if hosts := strings.Fields(string(out)); err == nil && len(hosts) > 0 {
		return hosts, nil
	}
	return mesh.ExpandHostlist(list)
}

// slurmNodeAddr asks Slurm for the address of node name (its NodeAddr).
func slurmNodeAddr(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "scontrol", "show", "node", "-o", name).Output()
	if err != nil {
		return "", err
	}
	for f := range strings.FieldsSeq(string(out)) {
		if a, ok := strings.CutPrefix(f, "NodeAddr="); ok {
			return a, nil
		}
	}
	return "", fmt.Errorf("scontrol show node %s: no NodeAddr", name)
}

// runMesh runs one rank of kvtier mesh.
func runMesh(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("mesh", "Usage: kvtier mesh [flags]   (once per rank, under srun, mpirun or a torchrun-style launcher)\n\nThe KV transfer matrix between every pair of ranks, intra- and inter-node: each rank serves a pool,\nrank 0 schedules the pairs and writes mesh.csv, mesh_matrix.csv, mesh_ranks.json, plots and the manifest.\nEvery rank needs the same run token (KVTIER_TOKEN or --token).", stderr)
	var f meshFlags
	f.add(fs)
	p, code, ok := parseOptions(fs, args, stderr, func() (meshPlan, error) { return f.plan(os.Getenv) })
	if !ok {
		return code
	}
	p.cfg.Log = stderr
	fmt.Fprintf(stderr, "kvtier mesh: %s\n", p.launch)
	r, code := openMeshRank(ctx, p, stderr)
	if r == nil {
		return code
	}
	defer r.close()
	if p.launch.Rank == 0 {
		return r.coordinate(ctx, p, f.out, args, stdout, stderr)
	}
	return r.serve(ctx, p, stderr)
}

// A meshRank is what one rank holds open: its side of the control
// connection, its pool and its server, its backends.
type meshRank struct {
	coord  *mesh.Coordinator // rank 0
	rank   *mesh.Rank        // the others
	self   mesh.Member
	worker *mesh.Worker
	closes []func()
}

func (r *meshRank) close() {
	for _, closeFn := range slices.Backward(r.closes) {
		closeFn()
	}
}

// openMeshRank meets the coordinator (rank 0: binds it), opens this
// rank's backends and pool and serves it on the address the coordinator
// is reached from. On failure it has said why in one line and returns
// the exit status.
func openMeshRank(ctx context.Context, p meshPlan, stderr io.Writer) (*meshRank, int) {
	r := &meshRank{}
	var ip net.IP
	if p.launch.Rank == 0 {
		c, err := mesh.Listen(p.cfg, p.launch.Coordinator)
		if err != nil {
			return nil, usageErr(stderr, "mesh", option.Wrap("coordinator", err))
		}
		r.coord, ip = c, c.Addr().(*net.TCPAddr).IP
		r.closes = append(r.closes, func() { c.Close(nil) })
	} else {
		rk, lip, err := mesh.DialCoordinator(ctx, p.cfg, p.launch.Coordinator)
		if err != nil {
			return nil, meshExit(ctx, stderr, p.launch.Rank, err, exitUsage)
		}
		r.rank, ip = rk, lip
		r.closes = append(r.closes, func() { rk.Close() })
	}
	if err := r.open(ctx, p, ip, stderr); err != nil {
		r.close()
		return nil, usageErr(stderr, "mesh", err)
	}
	return r, exitOK
}

// meshExit says how rank ended (err) and returns its exit status: 130
// when interrupted, else code.
func meshExit(ctx context.Context, stderr io.Writer, rank int, err error, code int) int {
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "kvtier mesh: rank %d interrupted\n", rank)
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "kvtier mesh: rank %d: %v\n", rank, err)
	return code
}

// open collects this rank's facts, picks its GPU and NIC, opens its
// backends and serves its pool.
func (r *meshRank) open(ctx context.Context, p meshPlan, ip net.IP, stderr io.Writer) error {
	man := &results.Manifest{Tool: "kvtier", Version: harness.Version(), Command: redact.Args(os.Args), Suite: mesh.Suite.Name, Start: time.Now().UTC()}
	for _, err := range system.Collect(sysConfig("/"), man) {
		man.Warnings = append(man.Warnings, err.Error())
	}
	host, _ := os.Hostname()
	self := mesh.Member{Launch: p.launch, Host: host, Transport: p.opts.Transport, Mem: p.mem, GPU: -1, Manifest: man}
	gpu := p.gpu
	if gpu < 0 {
		gpu = p.launch.LocalRank
	}
	for _, g := range man.GPUs {
		if g.Index == gpu {
			self.GPU, self.GPUBus = gpu, g.BusID
		}
	}
	rcfg, err := r.pickNIC(&self, p, ip)
	if err != nil {
		return err
	}
	bf := backendFlags{gpu: gpu, numa: -1}
	be, done, err := transfer.OpenBackends(ctx, p.opts, bf.backendConfig(stderr))
	if err != nil {
		return err
	}
	r.closes = append(r.closes, done)
	be.RDMA = rcfg
	r.worker = &mesh.Worker{Options: p.opts, Backends: be, BackendConfig: bf.backendConfig(stderr), Log: stderr}
	r.closes = append(r.closes, func() { r.worker.Close() })
	if err := r.servePool(ctx, p, &self, gpu, ip, rcfg, stderr); err != nil {
		return err
	}
	r.self = self
	return nil
}

// pickNIC chooses the rank's NIC: for verbs the RDMA port nearest its
// GPU (or --rdma-device), checked to open; for tcp the interface of ip.
func (r *meshRank) pickNIC(self *mesh.Member, p meshPlan, ip net.IP) (rdma.Config, error) {
	dev := p.opts.RDMADevice
	if dev == rdma.AutoDevice {
		dev = ""
	}
	rcfg := rdma.Config{Device: dev, GIDIndex: p.opts.GIDIndex, Root: "/", Library: libraries().IBVerbs, TC: p.opts.IBTC, SL: p.opts.IBSL}
	if p.opts.Transport != peer.Verbs {
		self.NIC = mesh.InterfaceOf(ip)
		return rcfg, nil
	}
	dist := func(a, b string) string { return system.Distance("/", a, b) }
	nic, d, ok := mesh.PickNIC(self.Manifest.NICs, dev, self.GPUBus, dist)
	if !ok {
		return rcfg, verbsProblem(rdma.ErrNoDevice)
	}
	rcfg.Device, rcfg.Port = nic.Name, nic.Port
	self.NIC, self.NICRate, self.GPUNIC = nic.Name, nic.RateGbps, d
	return rcfg, verbsReady(rcfg)
}

// servePool allocates the rank's pool and serves it, with the run token,
// until the rank closes.
func (r *meshRank) servePool(ctx context.Context, p meshPlan, self *mesh.Member, gpu int, ip net.IP, rcfg rdma.Config, stderr io.Writer) error {
	size := p.pool
	if size == 0 {
		size = meshPoolBytes(p.opts, p.launch.LocalSize)
	}
	seed := p.opts.Seed*1_000_003 + uint64(p.launch.Rank) + 1 // each rank's pool its own pattern
	so := serveOptions{Mem: p.mem, Pool: size, Seed: seed, backend: backendFlags{name: "cuda", gpu: gpu, numa: -1}}
	pool, closePool, err := so.openPool(ctx, stderr)
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
	srv := peer.NewServer(peer.ServerConfig{Pool: pool, Transport: p.opts.Transport, RDMA: rcfg, Log: stderr, Token: p.opts.Token, IdleTimeout: p.opts.IdleTimeout,
		Writable: p.opts.Stores()})
	served := make(chan struct{})
	go func() { srv.Serve(sctx, ln); close(served) }()
	r.closes = append(r.closes, func() { stop(); <-served })
	self.Addr, self.PoolBytes = ln.Addr().String(), pool.Size()
	return nil
}

// meshPoolBytes sizes a rank's pool: the largest size and a quarter,
// whole blocks, within 40% of free memory shared by the node's ranks.
func meshPoolBytes(o transfer.Options, local int) int64 {
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
func (r *meshRank) coordinate(ctx context.Context, p meshPlan, out outputFlags, args []string, stdout, stderr io.Writer) int {
	if _, err := r.coord.Rendezvous(ctx, r.self); err != nil {
		return meshExit(ctx, stderr, 0, err, exitUsage)
	}
	fmt.Fprintf(stderr, "kvtier mesh: all %d ranks joined\n", p.launch.Size)
	return suiteRun{cmd: "mesh", suite: mesh.Suite, out: out, args: args, plots: true,
		run: func(ctx context.Context, out *harness.Output) error {
			return r.coord.Run(ctx, out, r.worker, p.pattern, p.peerCopy)
		}}.exec(ctx, stdout, stderr)
}

// serve is every other rank: join, then the coordinator's tasks.
func (r *meshRank) serve(ctx context.Context, p meshPlan, stderr io.Writer) int {
	rank := p.launch.Rank
	if _, err := r.rank.Join(ctx, r.self); err != nil {
		return meshExit(ctx, stderr, rank, err, exitUsage)
	}
	if err := r.rank.Serve(ctx, r.worker); err != nil {
		return meshExit(ctx, stderr, rank, err, exitFail)
	}
	fmt.Fprintf(stderr, "kvtier mesh: rank %d: done\n", rank)
	return exitOK
}
