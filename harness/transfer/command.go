package transfer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/peer/peerflag"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/tiers/tierflag"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/xfer"
)

// commandFlags are the flags of kvtier transfer.
type commandFlags struct {
	call           *cli.Call
	out            cli.OutputFlags
	mb2            xfer.Flags
	peers, pool    string
	peerCopy, path string
	directions     string
	gpu            int
}

// Bind adds the flags to fs.
func (f *commandFlags) Bind(fs *pflag.FlagSet, c *cli.Call) {
	f.call = c
	f.out.Add(fs)
	f.mb2.Add(fs, xfer.DefaultOptions(), "transfer sizes (default 16MiB to 16GiB, doubling; sizes over the peer's pool or free memory are skipped rows)")
	fs.StringVar(&f.directions, "direction", "load", tierflag.DirectionUsage+"; load pulls from the peer, store pushes into its pool (kvtier serve --writable)")
	fs.StringVar(&f.peers, "peer", "", "HOST:PORT of kvtier serve peers, comma-separated, measured in turn into one transfer.csv (default: an embedded loopback peer)")
	fs.StringVar(&f.path, "path", "", "label rows intra or inter (default: intra when the peer is on this host, else inter; loopback for the embedded peer)")
	fs.StringVar(&f.pool, "pool", "", "pool of the embedded peer (default: fits the largest size in free memory)")
	fs.IntVar(&f.gpu, "gpu", 0, "CUDA device ordinal for --dst-mem gpu")
	fs.StringVar(&f.peerCopy, "peer-copy", "", "SRC,DST GPU ordinals: also time cuMemcpyPeerAsync from SRC to DST for each size and layout (rows path=peercopy; skipped rows without two GPUs)")
}

// Resolve turns the flags into the transfer's options, reporting every
// problem at once.
func (f *commandFlags) Resolve() (xfer.Options, error) {
	var errs []error
	o := f.mb2.Options(&errs, f.call.Getenv)
	o.Path = f.path
	o.Directions = cli.ListFlag(&errs, "direction", f.directions, tierflag.ParseDirection, tiers.Load)
	o.Peers = nil
	if strings.TrimSpace(f.peers) != "" {
		o.Peers = cli.ListFlag(&errs, "peers", f.peers, cli.Trimmed)
	}
	if f.pool != "" {
		o.PoolBytes = cli.SizeFlag(&errs, "pool", f.pool, xfer.MaxSize)
	}
	if f.peerCopy != "" {
		// A pair SRC,DST, not a list of values to measure: units.ParseList,
		// as cli.ListFlag would call "0,0" a value given twice, where
		// Validate says the two GPUs must differ.
		var err error
		o.PeerCopy, err = units.ParseList(f.peerCopy, func(s string) (int, error) {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 0 || n > tierflag.MaxOrdinal {
				return 0, fmt.Errorf("%q is not a GPU ordinal", s)
			}
			return n, nil
		})
		errs = append(errs, option.Wrap("peer-copy", err))
	}
	errs = append(errs, o.Validate(), f.out.Check())
	errs = append(errs, option.Range("gpu", f.gpu, 0, tierflag.MaxOrdinal))
	return o, errors.Join(errs...)
}

// runCommand runs MB2: KV transfer bandwidth against one or more peers.
func runCommand(ctx context.Context, c *cli.Call, f *commandFlags, opts xfer.Options) int {
	if opts.PoolBytes > 0 && len(opts.Peers) == 0 {
		if reason, _ := harness.HostFitReason("/", opts.PoolBytes); reason != "" {
			return c.UsageErr(option.Errorf("pool", "the embedded peer's pool %s", reason))
		}
	}
	bf := tierflag.BackendFlags{GPU: f.gpu, NUMA: -1}
	be, done, err := xfer.OpenBackends(ctx, opts, bf.Config(c.Stderr, tierflag.Libraries(c.Getenv)))
	if err != nil {
		return c.UsageErr(err)
	}
	defer done()
	opts.Library = tierflag.Libraries(c.Getenv).IBVerbs
	rcfg := opts.RDMA("/")
	if opts.Transport == peer.Verbs {
		rcfg, opts.DeviceReason = peer.PickDevice(rcfg, tierflag.GPUBus(be.Dst, opts.DstMem == xfer.DstGPU))
		if err := peerflag.VerbsReady(rcfg, c.Stderr); err != nil {
			return c.UsageErr(err)
		}
	}
	be.RDMA, be.Faults = rcfg, peerflag.PeerFaults(c.Getenv)
	// A peer that cannot be reached at all is bad input: say so before
	// the results directory exists. One that goes away later is an error
	// row in it.
	for _, addr := range opts.Peers {
		if err := peerflag.PeerReachable(ctx, addr, opts.Token); err != nil {
			return peerflag.Unreachable(ctx, c, err)
		}
	}
	return cli.SuiteRun{Call: c, Suite: Suite, Out: f.out,
		Run: func(ctx context.Context, out *harness.Output) error {
			return xfer.Run(ctx, opts, be, out, Suite, c.Stderr)
		}}.Exec(ctx)
}

// Command is kvtier transfer.
var Command = cli.Register(&cli.Command{Name: "transfer", Order: 50, Run: cli.Bound(runCommand),
	Summary:   "MB2: KV transfer bandwidth vs size against a peer",
	Usage:     "Usage: kvtier transfer [flags]\n\nMB2: reads KV of each size and layout from kvtier serve peers and writes transfer.csv, transfer_summary.csv and manifest.json.\nIntra- and inter-node rows in one file: --peer 127.0.0.1:7471,NODE2:7471.",
	ScriptEnv: []cli.EnvFlag{{Env: "KVTIER_PEER", Flag: "--peer"}, {Env: "KVTIER_PEERS", Flag: "--peer"}}})
