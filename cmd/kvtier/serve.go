package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/harness/transfer"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// serveOptions are the flags of kvtier serve.
type serveOptions struct {
	Listen    string
	Mem       string // host | gpu
	pool      string // --pool as given
	Pool      int64
	Transport string // tcp | verbs (verbs serves tcp clients too)
	Device    string // RDMA device
	GIDIndex  int
	TC, SL    int    // --ib-tc, --ib-sl
	gpuBus    string // PCI bus id of the pool's GPU (--mem gpu), for --rdma-device auto
	Seed      uint64
	backend   backendFlags // --gpu for --mem gpu
	token     tokenFlags   // --token: clients without it are refused
	Idle      time.Duration
	Sessions  int
	Writable  bool // accept stores into the pool
}

func (o *serveOptions) add(fs *pflag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:7471", "HOST:PORT to listen on (loopback unless told otherwise)")
	fs.StringVar(&o.Mem, "mem", peer.HostMem, "pool memory: host (anonymous mmap) or gpu (device memory of the cuda backend)")
	fs.StringVar(&o.pool, "pool", "1GiB", "pool size")
	fs.StringVar(&o.Transport, "transport", peer.TCP, "tcp, or verbs (RDMA READ from the registered pool; TCP clients are served too)")
	fs.StringVar(&o.Device, "rdma-device", rdma.AutoDevice, rdmaDeviceUsage)
	alias(fs, "device", "rdma-device")
	fs.IntVar(&o.backend.gpu, "gpu", 0, "CUDA device ordinal for --mem gpu")
	fs.IntVar(&o.GIDIndex, "gid-index", -1, gidIndexUsage)
	addIBQoS(fs, &o.TC, &o.SL)
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the pool's data pattern (clients verify against it)")
	o.token.add(fs)
	addIdleTimeout(fs, &o.Idle)
	fs.IntVar(&o.Sessions, "max-sessions", peer.DefaultMaxSessions, "connections served at once, handshakes included; one more is refused with a message saying so")
	fs.BoolVar(&o.Writable, "writable", false, "accept stores: clients that ask may write into the pool (kvtier sweep/transfer --direction store); the pool is read-only otherwise")
}

// maxSessions bounds kvtier serve's --max-sessions.
const maxSessions = 1 << 16

// validate parses --pool and reports every problem at once.
func (o *serveOptions) validate() error {
	var errs []error
	o.Pool = sizeFlag(&errs, "pool", o.pool, transfer.MaxSize)
	if _, port, err := net.SplitHostPort(o.Listen); err != nil {
		errs = append(errs, option.Errorf("listen", "%q: want HOST:PORT", o.Listen))
	} else if n, err := strconv.ParseUint(port, 10, 64); err == nil && n > 65535 {
		errs = append(errs, option.Errorf("listen", "port %s: want 0 to 65535", port))
	}
	if o.Mem != peer.HostMem && o.Mem != peer.GPUMem {
		errs = append(errs, option.Errorf("mem", "want host or gpu, got %q", o.Mem))
	}
	if o.Transport != peer.TCP && o.Transport != peer.Verbs {
		errs = append(errs, option.Errorf("transport", "want tcp or verbs, got %q", o.Transport))
	}
	errs = append(errs, option.Range("gid-index", o.GIDIndex, -1, rdma.MaxGIDIndex, "-1: automatic"),
		option.Range("ib-tc", o.TC, 0, rdma.MaxTC), option.Range("ib-sl", o.SL, 0, rdma.MaxSL),
		option.Range("max-sessions", o.Sessions, 1, maxSessions))
	o.backend.name, o.backend.numa = "cuda", -1
	return errors.Join(append(errs, o.backend.validate())...)
}

// runServe holds a pattern-filled pool and answers reads from it until
// SIGINT or SIGTERM.
func runServe(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("serve", "Usage: kvtier serve [flags]\n\nHolds a KV pool filled with a verifiable pattern and serves chunk reads to kvtier transfer and the remote tier.\nPrints one line \"kvtier serve: listening on ADDR (...)\" on stdout once ready; SIGINT or SIGTERM stops it.", stderr)
	var o serveOptions
	o.add(fs)
	if code, ok := parseNoArgs(fs, args, stderr); !ok {
		return code
	}
	if err := o.validate(); err != nil {
		return usageErr(stderr, "serve", err)
	}
	rcfg := rdma.Config{Device: o.Device, GIDIndex: o.GIDIndex, Root: "/", Library: libraries().IBVerbs, TC: o.TC, SL: o.SL}
	if o.Transport == peer.Verbs {
		// Open one endpoint now so a missing device or a bad GID index is
		// reported at start, not on the first client (nor after filling
		// the pool).
		if early, _ := peer.PickDevice(rcfg, ""); verbsReady(early) != nil {
			return usageErr(stderr, "serve", verbsReady(early))
		}
	}
	// Listen first: an address that cannot be had is refused before
	// the pool (gigabytes) is filled.
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return usageErr(stderr, "serve", option.Wrap("listen", err))
	}
	defer ln.Close()
	p, done, err := o.openPool(ctx, stderr)
	if err != nil {
		return usageErr(stderr, "serve", err)
	}
	defer done()
	if o.Transport == peer.Verbs {
		var why string
		if rcfg, why = peer.PickDevice(rcfg, o.gpuBus); o.gpuBus != "" {
			if err := verbsReady(rcfg); err != nil {
				return usageErr(stderr, "serve", err)
			}
		}
		fmt.Fprintf(stderr, "kvtier serve: RDMA device %s: %s\n", cmp.Or(rcfg.Device, "(libibverbs' first active port)"), why)
	}
	srv := peer.NewServer(peer.ServerConfig{Pool: p, Transport: o.Transport, RDMA: rcfg, Log: stderr, Token: o.token.value(),
		IdleTimeout: o.Idle, HandshakeTimeout: min(o.Idle, 10*time.Second), MaxSessions: o.Sessions, Writable: o.Writable})
	fmt.Fprintf(stdout, "kvtier serve: listening on %s (pool %s %s, transport %s)\n",
		ln.Addr(), units.FormatBytes(o.Pool), o.Mem, o.Transport)
	if f, ok := stdout.(interface{ Sync() error }); ok {
		f.Sync()
	}
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "kvtier serve: %v\n", err)
		return exitFail
	}
	return exitOK
}

// openPool fills the pool with the pattern: anonymous host memory, or
// device memory of the cuda backend (exportable as a DMA-BUF where the
// backend can) for --mem gpu.
func (o *serveOptions) openPool(ctx context.Context, stderr io.Writer) (*peer.Pool, func(), error) {
	if o.Mem != peer.GPUMem {
		p, err := peer.NewHostPool(o.Pool, o.Seed)
		return p, func() { p.Close() }, option.Wrap("pool", err)
	}
	b, _, err := tiers.OpenBackend(ctx, "cuda", o.backend.backendConfig(stderr))
	if err != nil {
		return nil, nil, option.Wrap("mem", err)
	}
	o.gpuBus = gpuBus(b, true)
	buf, err := b.Alloc(tiers.Device, o.Pool)
	if err != nil {
		b.Close()
		return nil, nil, option.Wrap("mem", err)
	}
	var export func() (int, int64, error)
	if exp, ok := b.(tiers.DMABufExporter); ok {
		export = func() (int, int64, error) { return exp.ExportDMABuf(buf) }
	}
	p, err := peer.NewBufferPool(buf, peer.GPUMem, export, o.Seed)
	if err != nil {
		buf.Close()
		b.Close()
		return nil, nil, err
	}
	if f, ok := b.(tiers.GPUDirectFlusher); ok {
		p.SetGPUDirectFlush(f.FlushGPUDirectWrites)
	}
	return p, func() { p.Close(); b.Close() }, nil
}

// verbsProblem phrases an endpoint failure for a one-line error: a
// missing library or device always says "no RDMA device".
func verbsProblem(err error) error {
	switch {
	case errors.Is(err, rdma.ErrNoDevice):
		return fmt.Errorf("--transport verbs: %w", err)
	case errors.Is(err, rdma.ErrNoLibrary):
		return fmt.Errorf("--transport verbs: no RDMA device (%w)", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "GID index") {
		return fmt.Errorf("--gid-index: %w", err)
	}
	return fmt.Errorf("--transport verbs: %w", err)
}

// verbsReady says whether this machine can open the verbs endpoint cfg
// describes, as a one-line reason ("no RDMA device", a GID index that
// does not exist) when it cannot.
func verbsReady(cfg rdma.Config) error {
	names, err := rdma.DeviceNames(cfg.Library)
	if err != nil {
		return verbsProblem(err)
	}
	if len(names) == 0 {
		return verbsProblem(rdma.ErrNoDevice)
	}
	ep, err := rdma.Open(cfg)
	if err != nil {
		return verbsProblem(err)
	}
	return ep.Close()
}
