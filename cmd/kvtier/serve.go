package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/option"
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
	fs.StringVar(&o.Device, "rdma-device", "", "RDMA device, e.g. mlx5_0 (default: the first with an active port)")
	alias(fs, "device", "rdma-device")
	fs.IntVar(&o.GPU, "gpu", 0, "CUDA device ordinal for --mem gpu")
	fs.IntVar(&o.GIDIndex, "gid-index", -1, "GID index (-1: the first RoCE v2 GID with an address)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the pool's data pattern (clients verify against it)")
	var token tokenFlags
	token.add(fs)
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

	rcfg := rdma.Config{Device: o.Device, GIDIndex: o.GIDIndex, Root: "/"}
	if o.Transport == peer.Verbs {
		// Open one endpoint now so a missing device or a bad GID index is
		// reported at start, not on the first client.
		if err := verbsReady(rcfg); err != nil {
			return usageErr(stderr, "serve", err)
		}
	}

	p, closePool, err := openPool(ctx, o.Mem, o.Pool, o.GPU, o.Seed, stderr)
	if err != nil {
		return usageErr(stderr, "serve", err)
	}
	defer closePool()

	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return usageErr(stderr, "serve", fmt.Errorf("--listen: %w", err))
	}
	srv := peer.NewServer(peer.ServerConfig{Pool: p, Transport: o.Transport, RDMA: rcfg, Log: stderr, Token: token.value()})
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

// openPool allocates a pool of size bytes filled with the pattern of
// seed: anonymous host memory, or device memory of GPU gpu through the
// cuda backend (exported as a DMA-BUF for verbs where it can be). close
// frees it and the backend.
func openPool(ctx context.Context, mem string, size int64, gpu int, seed uint64, log io.Writer) (*peer.Pool, func(), error) {
	if mem != peer.GPUMem {
		p, err := peer.NewHostPool(size, seed)
		if err != nil {
			return nil, nil, err
		}
		return p, func() { p.Close() }, nil
	}
	b, _, err := tiers.OpenBackend(ctx, "cuda", tiers.BackendConfig{GPU: gpu, NUMA: -1, Log: log})
	if err != nil {
		return nil, nil, option.Wrap("mem", fmt.Errorf("gpu: %w", err))
	}
	buf, err := b.Alloc(tiers.Device, size)
	if err != nil {
		b.Close()
		return nil, nil, option.Wrap("mem", fmt.Errorf("gpu: %w", err))
	}
	var export func() (int, int64, error)
	if exp, ok := b.(tiers.DMABufExporter); ok {
		export = func() (int, int64, error) { return exp.ExportDMABuf(buf) }
	}
	p, err := peer.NewBufferPool(buf, peer.GPUMem, export, seed)
	if err != nil {
		buf.Close()
		b.Close()
		return nil, nil, err
	}
	return p, func() { p.Close(); b.Close() }, nil
}

// verbsProblem phrases an endpoint failure for a one-line error: a
// missing library or device always says "no RDMA device".
func verbsProblem(err error) error {
	switch {
	case errors.Is(err, rdma.ErrNoDevice):
		return fmt.Errorf("--transport verbs: %w", err)
	case errors.Is(err, rdma.ErrNoLibrary), errors.Is(err, rdma.ErrNotBuilt):
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
