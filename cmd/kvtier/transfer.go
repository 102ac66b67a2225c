package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// transferFlags are the raw flag values of kvtier transfer.
type transferFlags struct {
	opts                        harness.TransferOptions
	peers, sizes, layouts, pool string
	out                         string
	qps                         int
	peerCopy                    string
}

// parse turns the flags into options, reporting every problem at once.
func (f *transferFlags) parse() (harness.TransferOptions, error) {
	o := f.opts
	var errs []error
	o.Peers = nil
	if strings.TrimSpace(f.peers) != "" {
		for _, p := range strings.Split(f.peers, ",") {
			o.Peers = append(o.Peers, strings.TrimSpace(p))
		}
	}
	if f.sizes != "" {
		o.Sizes = listFlag(&errs, "--sizes", f.sizes, func(s string) (int64, error) { return units.ParseBytes(strings.TrimSpace(s)) }, 1)
	}
	o.Layouts = listFlag(&errs, "--layout", f.layouts, func(s string) (string, error) { return strings.TrimSpace(s), nil }, harness.TransferLayerwise)
	if f.pool != "" {
		n, err := units.ParseBytes(f.pool)
		if err != nil {
			errs = append(errs, fmt.Errorf("--pool: %w", err))
		}
		o.PoolBytes = n
	}
	if f.peerCopy != "" {
		o.PeerCopy = listFlag(&errs, "--peer-copy", f.peerCopy, func(s string) (int, error) {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return 0, fmt.Errorf("%q is not a GPU ordinal", s)
			}
			return n, nil
		})
	}
	if f.qps > 0 {
		o.Conns = f.qps
	}
	if err := o.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := checkOutDir(f.out); err != nil {
		errs = append(errs, fmt.Errorf("--out: %w", err))
	}
	return o, errors.Join(errs...)
}

// runTransfer runs MB2: KV transfer bandwidth against one or more peers.
func runTransfer(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := pflag.NewFlagSet("transfer", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	f := transferFlags{opts: harness.DefaultTransferOptions()}
	o := &f.opts
	d := harness.DefaultTransferOptions()
	fs.StringVar(&f.peers, "peer", "", "HOST:PORT of kvtier serve peers, comma-separated, measured in turn into one transfer.csv (default: an embedded loopback peer)")
	fs.StringVar(&f.sizes, "sizes", "", "transfer sizes (default 16MiB to 16GiB, doubling; sizes over the peer's pool or free memory are skipped rows)")
	fs.IntVar(&o.Reps, "reps", d.Reps, "measured reps per size")
	fs.IntVar(&o.Warmup, "warmup", d.Warmup, "discarded warm-up reps per size")
	fs.StringVar(&f.layouts, "layout", strings.Join(d.Layouts, ","), "layouts: layerwise (16 KiB chunks), blockwise (one chunk per KV block), contiguous (one message)")
	fs.StringVar(&o.Model, "model", d.Model, "model whose KV geometry sets the chunk sizes ("+strings.Join(kv.ModelNames(), ", ")+")")
	fs.IntVar(&o.BlockTokens, "block-size", d.BlockTokens, "tokens per KV block")
	fs.IntVar(&o.Conns, "conns", d.Conns, "parallel TCP connections (or RC QPs for verbs)")
	fs.IntVar(&f.qps, "qps", 0, "RC queue pairs for verbs (same as --conns)")
	fs.StringVar(&o.Transport, "transport", d.Transport, "tcp or verbs")
	fs.StringVar(&o.Path, "path", "", "label rows intra or inter (default: intra when the peer is on this host, else inter; loopback for the embedded peer)")
	fs.Float64Var(&o.LineGbps, "line-rate", 0, "link rate in Gb/s for line_frac (default: the NIC's rate for verbs, unknown for tcp)")
	fs.StringVar(&o.RDMADevice, "rdma-device", "", "RDMA device, e.g. mlx5_0 (default: the first active port)")
	fs.IntVar(&o.GIDIndex, "gid-index", d.GIDIndex, "GID index (-1: the first RoCE v2 GID with an address)")
	fs.Uint64Var(&o.Seed, "seed", d.Seed, "seed of chunk placement")
	fs.StringVar(&f.pool, "pool", "", "pool of the embedded peer (default: fits the largest size in free memory)")
	fs.StringVar(&o.DstMem, "dst-mem", harness.DstHost, "where reads land: host, or gpu (device memory through the cuda backend: GPUDirect on verbs when it registers, else a pinned bounce buffer + H2D, timed together; the path column gets +gpudirect or +bounce)")
	fs.IntVar(&o.GPU, "gpu", 0, "CUDA device ordinal for --dst-mem gpu")
	fs.StringVar(&f.peerCopy, "peer-copy", "", "SRC,DST GPU ordinals: also time cuMemcpyPeerAsync from SRC to DST for each size and layout (rows path=peercopy; skipped rows without two GPUs)")
	fs.StringVar(&f.out, "out", defaultOut(), "results directory")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: kvtier transfer [flags]\n\nMB2: reads KV of each size and layout from kvtier serve peers and writes transfer.csv, transfer_summary.csv and manifest.json.\nIntra- and inter-node rows in one file: --peer 127.0.0.1:7471,NODE2:7471.")
		fs.PrintDefaults()
	}
	if code, ok := parseNoArgs(fs, args, stderr); !ok {
		return code
	}
	opts, err := f.parse()
	if err != nil {
		return usageErr(stderr, "transfer", err)
	}
	opts.Libs, opts.Faults = libraries(), peerFaults()
	if opts.Transport == peer.Verbs {
		if err := verbsReady(rdma.Config{Device: opts.RDMADevice, GIDIndex: opts.GIDIndex, Root: "/", Library: opts.Libs.IBVerbs}); err != nil {
			return usageErr(stderr, "transfer", err)
		}
	}
	if opts.DstMem == harness.DstGPU {
		b, _, err := tiers.OpenBackend(ctx, "cuda", tiers.BackendConfig{GPU: opts.GPU, NUMA: -1, Log: stderr, Libs: opts.Libs})
		if err != nil {
			return usageErr(stderr, "transfer", fmt.Errorf("--dst-mem gpu: %w", err))
		}
		defer b.Close()
		opts.Backend = b
	}
	// A peer that cannot be reached at all is bad input: say so before
	// the results directory exists. One that goes away later is an error
	// row in it.
	for _, addr := range opts.Peers {
		if err := peerReachable(ctx, addr); err != nil {
			return usageErr(stderr, "transfer", err)
		}
	}
	out, err := harness.CreateOutput(f.out, "transfer", append([]string{"kvtier", "transfer"}, args...), sysConfig("/"), stderr)
	if err != nil {
		return usageErr(stderr, "transfer", err)
	}
	// Progress goes to stdout; stderr carries only warnings and the one
	// line of a failure.
	fmt.Fprintf(stdout, "kvtier transfer: writing %s\n", out.Dir)
	terr := harness.Transfer(ctx, opts, out, stdout)
	interrupted := terr != nil && !errors.Is(terr, harness.ErrMeasurementFailed)
	if cerr := out.Close(interrupted); cerr != nil {
		fmt.Fprintf(stderr, "kvtier transfer: %v\n", cerr)
		if terr == nil {
			return exitFail
		}
	}
	switch {
	case terr == nil:
		return exitOK
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "kvtier transfer: interrupted; rows measured so far are in %s\n", out.Dir)
		return exitInterrupted
	case errors.Is(terr, harness.ErrMeasurementFailed):
		fmt.Fprintf(stderr, "kvtier transfer: %v (see the error rows in %s)\n", terr, filepath.Join(out.Dir, "transfer.csv"))
		return exitFail
	}
	return usageErr(stderr, "transfer", terr)
}

// peerReachable reports a kvtier serve peer that does not complete a
// handshake within five seconds (nothing listening, or not a kvtier peer),
// naming the flag; commands check it before they create a results
// directory. Every peer also serves TCP clients, so TCP asks for all.
func peerReachable(ctx context.Context, addr string) error {
	c, err := peer.Dial(ctx, addr, peer.DialOptions{Transport: peer.TCP, Timeout: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("--peer %s: unreachable: %w", addr, err)
	}
	return c.Close()
}
