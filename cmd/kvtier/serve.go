package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// serveOptions are the resolved options of kvtier serve.
type serveOptions struct {
	Listen    string
	Mem       string // host | gpu
	Pool      int64
	Transport string // tcp | verbs (verbs serves tcp clients too)
	Device    string // RDMA device
	GPU       int
	GIDIndex  int
	Seed      uint64
}

// Validate reports every problem of o at once.
func (o serveOptions) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen %q: want HOST:PORT", o.Listen))
	}
	if o.Mem != peer.HostMem && o.Mem != peer.GPUMem {
		errs = append(errs, fmt.Errorf("--mem %q: want host or gpu", o.Mem))
	}
	if o.Transport != peer.TCP && o.Transport != peer.Verbs {
		errs = append(errs, fmt.Errorf("--transport %q: want tcp or verbs", o.Transport))
	}
	if o.Pool <= 0 {
		errs = append(errs, errors.New("--pool must be positive"))
	}
	if o.GIDIndex < -1 {
		errs = append(errs, fmt.Errorf("--gid-index %d: want -1 (automatic) or an index", o.GIDIndex))
	}
	return errors.Join(errs...)
}

// runServe holds a pattern-filled pool and answers reads from it until
// SIGINT or SIGTERM.
func runServe(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var o serveOptions
	var pool string
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:7471", "HOST:PORT to listen on (loopback unless told otherwise)")
	fs.StringVar(&o.Mem, "mem", peer.HostMem, "pool memory: host (anonymous mmap) or gpu (device memory of the cuda backend)")
	fs.StringVar(&pool, "pool", "1GiB", "pool size")
	fs.StringVar(&o.Transport, "transport", peer.TCP, "tcp, or verbs (RDMA READ from the registered pool; TCP clients are served too)")
	fs.StringVar(&o.Device, "device", "", "RDMA device, e.g. mlx5_0 (default: the first with an active port)")
	fs.IntVar(&o.GPU, "gpu", 0, "CUDA device ordinal for --mem gpu")
	fs.IntVar(&o.GIDIndex, "gid-index", -1, "GID index (-1: the first RoCE v2 GID with an address)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the pool's data pattern (clients verify against it)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: kvtier serve [flags]\n\nHolds a KV pool filled with a verifiable pattern and serves chunk reads to kvtier transfer and the remote tier.\nPrints one line \"kvtier serve: listening on ADDR (...)\" on stdout once ready; SIGINT or SIGTERM stops it.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if n, err := units.ParseBytes(pool); err != nil {
		errs = append(errs, fmt.Errorf("--pool: %w", err))
		o.Pool = 1
	} else {
		o.Pool = n
	}
	if err := o.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return usageErr(stderr, "serve", err)
	}

	libs := libraries()
	rcfg := rdma.Config{Device: o.Device, GIDIndex: o.GIDIndex, Root: "/", Library: libs.IBVerbs}
	if o.Transport == peer.Verbs {
		// Open one endpoint now so a missing device or a bad GID index is
		// reported at start, not on the first client.
		if err := verbsReady(rcfg); err != nil {
			return usageErr(stderr, "serve", err)
		}
	}

	var p *peer.Pool
	if o.Mem == peer.GPUMem {
		b, _, err := tiers.OpenBackend(ctx, "cuda", tiers.BackendConfig{GPU: o.GPU, NUMA: -1, Log: stderr, Libs: libs})
		if err != nil {
			return usageErr(stderr, "serve", fmt.Errorf("--mem gpu: %w", err))
		}
		defer b.Close()
		buf, err := b.Alloc(tiers.Device, o.Pool)
		if err != nil {
			return usageErr(stderr, "serve", fmt.Errorf("--mem gpu: %w", err))
		}
		var export func() (int, int64, error)
		if exp, ok := b.(tiers.DMABufExporter); ok {
			export = func() (int, int64, error) { return exp.ExportDMABuf(buf) }
		}
		if p, err = peer.NewBufferPool(buf, peer.GPUMem, export, o.Seed); err != nil {
			buf.Close()
			return usageErr(stderr, "serve", err)
		}
	} else {
		var err error
		if p, err = peer.NewHostPool(o.Pool, o.Seed); err != nil {
			return usageErr(stderr, "serve", err)
		}
	}
	defer p.Close()

	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return usageErr(stderr, "serve", fmt.Errorf("--listen: %w", err))
	}
	srv := peer.NewServer(peer.ServerConfig{Pool: p, Transport: o.Transport, RDMA: rcfg, Log: stderr})
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
