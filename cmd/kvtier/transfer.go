package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/harness/transfer"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// mb2Flags are the flags of an MB2 measurement that kvtier transfer and
// kvtier mesh share: what is read, how, and where it lands.
type mb2Flags struct {
	model          modelFlags
	policy         policyFlags
	token          tokenFlags
	sizes, layouts string
	opts           transfer.Options
}

func (f *mb2Flags) add(fs *pflag.FlagSet, o transfer.Options, sizesHelp string) {
	f.opts = o
	p := &f.opts
	f.model.add(fs)
	f.policy.add(fs, o.Policy, false)
	f.token.add(fs)
	fs.StringVar(&f.sizes, "sizes", "", sizesHelp)
	fs.StringVar(&f.layouts, "layout", strings.Join(o.Layouts, ","), "layouts: layerwise (16 KiB chunks), blockwise (one chunk per KV block), contiguous (one message)")
	fs.IntVar(&p.Conns, "conns", o.Conns, "parallel TCP connections (or RC QPs for verbs)")
	alias(fs, "qps", "conns")
	fs.StringVar(&p.Transport, "transport", o.Transport, "tcp or verbs")
	fs.Float64Var(&p.LineGbps, "line-rate", 0, "link rate in Gb/s for line_frac (default: the NIC's rate for verbs, unknown for tcp)")
	fs.StringVar(&p.RDMADevice, "rdma-device", rdma.AutoDevice, rdmaDeviceUsage)
	fs.IntVar(&p.GIDIndex, "gid-index", o.GIDIndex, gidIndexUsage)
	addIBQoS(fs, &p.IBTC, &p.IBSL)
	fs.Uint64Var(&p.Seed, "seed", o.Seed, "seed of chunk placement")
	fs.StringVar(&p.DstMem, "dst-mem", transfer.DstHost, "where reads land: host, or gpu (device memory through the cuda backend: GPUDirect on verbs when it registers, else a pinned bounce buffer + H2D, timed together; the path column gets +gpudirect or +bounce)")
}

// options turns the shared flags into options, adding every problem to
// errs.
func (f *mb2Flags) options(errs *[]error) transfer.Options {
	o := f.opts
	if f.sizes != "" {
		o.Sizes = listFlag(errs, "sizes", f.sizes, func(s string) (int64, error) { return units.ParseBytes(strings.TrimSpace(s)) }, 1)
	}
	o.Layouts = listFlag(errs, "layout", f.layouts, func(s string) (string, error) { return strings.TrimSpace(s), nil }, transfer.Layerwise)
	var err error
	if o.Geometry, err = f.model.geometry(); err != nil {
		*errs = append(*errs, err)
		o.Geometry = f.opts.Geometry
	}
	o.Policy, err = f.policy.policy()
	*errs = append(*errs, err)
	o.Token = f.token.value()
	return o
}

// transferFlags are the flags of kvtier transfer.
type transferFlags struct {
	out            outputFlags
	mb2            mb2Flags
	peers, pool    string
	peerCopy, path string
	directions     string
	gpu            int
}

func (f *transferFlags) add(fs *pflag.FlagSet) {
	f.out.add(fs)
	f.mb2.add(fs, transfer.DefaultOptions(), "transfer sizes (default 16MiB to 16GiB, doubling; sizes over the peer's pool or free memory are skipped rows)")
	fs.StringVar(&f.directions, "direction", "load", directionUsage+"; load pulls from the peer, store pushes into its pool (kvtier serve --writable)")
	fs.StringVar(&f.peers, "peer", "", "HOST:PORT of kvtier serve peers, comma-separated, measured in turn into one transfer.csv (default: an embedded loopback peer)")
	fs.StringVar(&f.path, "path", "", "label rows intra or inter (default: intra when the peer is on this host, else inter; loopback for the embedded peer)")
	fs.StringVar(&f.pool, "pool", "", "pool of the embedded peer (default: fits the largest size in free memory)")
	fs.IntVar(&f.gpu, "gpu", 0, "CUDA device ordinal for --dst-mem gpu")
	addIdleTimeout(fs, &f.mb2.opts.IdleTimeout)
	fs.StringVar(&f.peerCopy, "peer-copy", "", "SRC,DST GPU ordinals: also time cuMemcpyPeerAsync from SRC to DST for each size and layout (rows path=peercopy; skipped rows without two GPUs)")
}

// options turns the flags into the transfer's options, reporting every
// problem at once.
func (f *transferFlags) options() (transfer.Options, error) {
	var errs []error
	o := f.mb2.options(&errs)
	o.Path = f.path
	o.Directions = listFlag(&errs, "direction", f.directions, parseDirection, tiers.Load)
	o.Peers = nil
	if strings.TrimSpace(f.peers) != "" {
		for p := range strings.SplitSeq(f.peers, ",") {
			o.Peers = append(o.Peers, strings.TrimSpace(p))
		}
	}
	if f.pool != "" {
		o.PoolBytes = sizeFlag(&errs, "pool", f.pool, transfer.MaxSize)
	}
	if f.peerCopy != "" {
		o.PeerCopy = listFlag(&errs, "peer-copy", f.peerCopy, func(s string) (int, error) {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 0 || n > maxOrdinal {
				return 0, fmt.Errorf("%q is not a GPU ordinal", s)
			}
			return n, nil
		})
	}
	errs = append(errs, o.Validate(), f.out.check())
	errs = append(errs, option.Range("gpu", f.gpu, 0, maxOrdinal))
	return o, errors.Join(errs...)
}

// runTransfer runs MB2: KV transfer bandwidth against one or more peers.
func runTransfer(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("transfer", "Usage: kvtier transfer [flags]\n\nMB2: reads KV of each size and layout from kvtier serve peers and writes transfer.csv, transfer_summary.csv and manifest.json.\nIntra- and inter-node rows in one file: --peer 127.0.0.1:7471,NODE2:7471.", stderr)
	var f transferFlags
	f.add(fs)
	opts, code, ok := parseOptions(fs, args, stderr, f.options)
	if !ok {
		return code
	}
	if opts.PoolBytes > 0 && len(opts.Peers) == 0 {
		if reason, _ := harness.HostFitReason("/", opts.PoolBytes); reason != "" {
			return usageErr(stderr, "transfer", option.Errorf("pool", "the embedded peer's pool %s", reason))
		}
	}
	bf := backendFlags{gpu: f.gpu, numa: -1}
	be, done, err := transfer.OpenBackends(ctx, opts, bf.backendConfig(stderr))
	if err != nil {
		return usageErr(stderr, "transfer", err)
	}
	defer done()
	rcfg := rdma.Config{Device: opts.RDMADevice, GIDIndex: opts.GIDIndex, Root: "/", Library: libraries().IBVerbs, TC: opts.IBTC, SL: opts.IBSL}
	if opts.Transport == peer.Verbs {
		rcfg, opts.DeviceReason = peer.PickDevice(rcfg, gpuBus(be.Dst, opts.DstMem == transfer.DstGPU))
		if err := verbsReady(rcfg); err != nil {
			return usageErr(stderr, "transfer", err)
		}
	}
	be.RDMA, be.Faults = rcfg, peerFaults()
	// A peer that cannot be reached at all is bad input: say so before
	// the results directory exists. One that goes away later is an error
	// row in it.
	for _, addr := range opts.Peers {
		if err := peerReachable(ctx, addr, opts.Token); err != nil {
			return peerUnreachable(ctx, stderr, "transfer", err)
		}
	}
	return suiteRun{cmd: "transfer", suite: transfer.Suite, out: f.out, args: args,
		run: func(ctx context.Context, out *harness.Output) error {
			return transfer.Run(ctx, opts, be, out, stderr)
		}}.exec(ctx, stdout, stderr)
}

// peerUnreachable returns the exit status of a command whose peer check
// failed with err: interrupted where Ctrl-C ended the handshake, bad
// input otherwise.
func peerUnreachable(ctx context.Context, stderr io.Writer, cmd string, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "kvtier %s: interrupted while connecting to the peer; nothing written\n", cmd)
		return exitInterrupted
	}
	return usageErr(stderr, cmd, err)
}

// peerReachable reports a kvtier serve peer that does not complete a
// handshake within five seconds (nothing listening, or not a kvtier peer),
// naming the flag; commands check it before they create a results
// directory. Every peer also serves TCP clients, so TCP asks for all.
func peerReachable(ctx context.Context, addr, token string) error {
	c, err := peer.Dial(ctx, addr, peer.DialOptions{Transport: peer.TCP, Timeout: 5 * time.Second, Token: token})
	if err != nil {
		return option.Errorf("peer", "%s: unreachable: %w", addr, err)
	}
	return c.Close()
}
