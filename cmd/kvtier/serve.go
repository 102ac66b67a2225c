package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/peer/peerflag"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/tiers/tierflag"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/xfer"
)

// serveCommand is kvtier serve.
var serveCommand = cli.Register(&cli.Command{
	Name:    "serve",
	Summary: "a peer holding a KV pool for the remote tier and transfers",
	Order:   40,
	Usage:   "Usage: kvtier serve [flags]\n\nHolds a KV pool filled with a verifiable pattern and serves chunk reads to kvtier transfer and the remote tier.\nPrints one line \"kvtier serve: listening on ADDR (...)\" on stdout once ready; SIGINT or SIGTERM stops it.",
	Run:     runServe,
	Env:     tierflag.LibraryGroup.Env, // --mem gpu opens the cuda backend
})

// serveOptions are the flags of kvtier serve.
type serveOptions struct {
	Listen    string
	Mem       string // host | gpu
	pool      string // --pool as given
	Pool      int64
	Transport string // tcp | verbs (verbs serves tcp clients too)
	Device    string // RDMA device
	GIDIndex  int
	TC, SL    int // --ib-tc, --ib-sl
	Seed      uint64
	backend   tierflag.BackendFlags // --gpu for --mem gpu
	token     peerflag.TokenFlags   // --token: clients without it are refused
	Idle      time.Duration
	Sessions  int
	Writable  bool // accept stores into the pool
}

func (o *serveOptions) add(fs *pflag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:7471", "HOST:PORT to listen on (loopback unless told otherwise)")
	fs.StringVar(&o.Mem, "mem", peer.HostMem, "pool memory: host (anonymous mmap) or gpu (device memory of the cuda backend)")
	fs.StringVar(&o.pool, "pool", "1GiB", "pool size")
	fs.StringVar(&o.Transport, "transport", peer.TCP, "tcp, or verbs (RDMA READ from the registered pool; TCP clients are served too)")
	fs.StringVar(&o.Device, "rdma-device", rdma.AutoDevice, peerflag.RDMADeviceUsage)
	cli.Alias(fs, "device", "rdma-device")
	fs.IntVar(&o.backend.GPU, "gpu", 0, "CUDA device ordinal for --mem gpu")
	fs.IntVar(&o.GIDIndex, "gid-index", -1, peerflag.GIDIndexUsage)
	peerflag.AddIBQoS(fs, &o.TC, &o.SL)
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the pool's data pattern (clients verify against it)")
	o.token.Add(fs)
	cli.AddIdleTimeout(fs, &o.Idle)
	fs.IntVar(&o.Sessions, "max-sessions", peer.DefaultMaxSessions, "connections served at once, handshakes included; one more is refused with a message saying so")
	fs.BoolVar(&o.Writable, "writable", false, "accept stores: clients that ask may write into the pool (kvtier sweep/transfer --direction store); the pool is read-only otherwise")
}

// maxSessions bounds kvtier serve's --max-sessions.
const maxSessions = 1 << 16

// validate parses --pool and reports every problem at once; getenv
// reads the run token where --token is not given.
func (o *serveOptions) validate(getenv func(string) string) error {
	var errs []error
	o.Pool = cli.SizeFlag(&errs, "pool", o.pool, xfer.MaxSize)
	errs = append(errs, o.token.Check(getenv))
	if host, port, err := net.SplitHostPort(o.Listen); err != nil {
		errs = append(errs, option.Errorf("listen", "%q: want HOST:PORT", o.Listen))
	} else if n, err := strconv.ParseUint(port, 10, 64); err == nil && n > 65535 {
		errs = append(errs, option.Errorf("listen", "port %s: want 0 to 65535", port))
	} else if o.Writable && o.token.Value(getenv) == "" && !loopback(host) {
		errs = append(errs, option.Errorf("writable", "%s reaches beyond loopback: anyone who reaches it could overwrite the pool; give --token (or $%s) to serve a writable pool there", o.Listen, peerflag.EnvToken))
	}
	if o.Mem != peer.HostMem && o.Mem != peer.GPUMem {
		errs = append(errs, option.Errorf("mem", "want host or gpu, got %q", o.Mem))
	}
	if o.Transport != peer.TCP && o.Transport != peer.Verbs {
		errs = append(errs, option.Errorf("transport", "want tcp or verbs, got %q", o.Transport))
	}
	errs = append(errs, option.Range("gid-index", o.GIDIndex, -1, rdma.MaxGIDIndex, "-1: automatic"),
		option.Range("ib-tc", o.TC, 0, rdma.MaxTC), option.Range("ib-sl", o.SL, 0, rdma.MaxSL),
		option.Range("max-sessions", o.Sessions, 1, maxSessions), peer.CheckQoS(o.Transport, o.TC, o.SL))
	o.backend.Name, o.backend.NUMA = "cuda", -1
	return errors.Join(append(errs, o.backend.Validate())...)
}

// loopback reports whether a listen host is loopback only: localhost or
// a loopback address ("" and unspecified addresses listen everywhere; a
// name is not resolved, so it counts as beyond loopback).
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// runServe holds a pattern-filled pool and answers reads from it until
// SIGINT or SIGTERM.
func runServe(ctx context.Context, c *cli.Call) int {
	fs := c.FlagSet()
	var o serveOptions
	o.add(fs)
	if code, ok := c.ParseNoArgs(fs); !ok {
		return code
	}
	if err := o.validate(c.Getenv); err != nil {
		return c.UsageErr(err)
	}
	rcfg := rdma.Config{Device: o.Device, GIDIndex: o.GIDIndex, Root: "/", Library: tierflag.Libraries(c.Getenv).IBVerbs, TC: o.TC, SL: o.SL}
	if o.Transport == peer.Verbs {
		// Open one endpoint now so a missing device or a bad GID index is
		// reported at start, not on the first client (nor after filling
		// the pool).
		early, _ := peer.PickDevice(rcfg, "")
		if err := peerflag.VerbsReady(early, c.Stderr); err != nil {
			return c.UsageErr(err)
		}
	}
	// Listen first: an address that cannot be had is refused before
	// the pool (gigabytes) is filled.
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return c.UsageErr(option.Wrap("listen", err))
	}
	defer ln.Close()
	p, gpuBus, done, err := tierflag.Pool{Mem: o.Mem, Size: o.Pool, Seed: o.Seed, Backend: o.backend.Config(c.Stderr, tierflag.Libraries(c.Getenv))}.Open(ctx)
	if err != nil {
		return c.UsageErr(err)
	}
	defer done()
	if o.Transport == peer.Verbs {
		var why string
		if rcfg, why = peer.PickDevice(rcfg, gpuBus); gpuBus != "" {
			if err := peerflag.VerbsReady(rcfg, io.Discard); err != nil { // warned above
				return c.UsageErr(err)
			}
		}
		c.Logf("RDMA device %s: %s", cmp.Or(rcfg.Device, "(libibverbs' first active port)"), why)
	}
	srv := peer.NewServer(peer.ServerConfig{Pool: p, Transport: o.Transport, RDMA: rcfg, Log: c.Stderr, Token: o.token.Value(c.Getenv),
		IdleTimeout: o.Idle, HandshakeTimeout: min(o.Idle, 10*time.Second), MaxSessions: o.Sessions, Writable: o.Writable})
	fmt.Fprintf(c.Stdout, "kvtier serve: listening on %s (pool %s %s, transport %s)\n",
		ln.Addr(), units.FormatBytes(o.Pool), o.Mem, o.Transport)
	if f, ok := c.Stdout.(interface{ Sync() error }); ok {
		f.Sync()
	}
	if err := srv.Serve(ctx, ln); err != nil {
		c.Logf("%v", err)
		return cli.ExitFail
	}
	return cli.ExitOK
}
