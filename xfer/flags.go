package xfer

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/peer/peerflag"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/units"
)

// Flags are the flags of an MB2 measurement that kvtier transfer and
// kvtier mesh share: what is read, how, and where it lands.
type Flags struct {
	model          cli.ModelFlags
	policy         cli.PolicyFlags
	token          peerflag.TokenFlags
	sizes, layouts string
	// Opts are the options the flags start from and set.
	Opts Options
}

// Add adds the flags to fs, defaulting to o; sizesHelp is --sizes' help.
func (f *Flags) Add(fs *pflag.FlagSet, o Options, sizesHelp string) {
	f.Opts = o
	p := &f.Opts
	f.model.Add(fs)
	f.policy.Add(fs, o.Policy, false)
	f.token.Add(fs)
	fs.StringVar(&f.sizes, "sizes", "", sizesHelp)
	fs.StringVar(&f.layouts, "layout", strings.Join(o.Layouts, ","), "layouts: layerwise (16 KiB chunks), blockwise (one chunk per KV block), contiguous (one message)")
	fs.IntVar(&p.Conns, "conns", o.Conns, peer.ConnsUsage)
	cli.Alias(fs, "qps", "conns")
	fs.StringVar(&p.Transport, "transport", o.Transport, "tcp or verbs")
	fs.Float64Var(&p.LineGbps, "line-rate", 0, "link rate in Gb/s for line_frac (default: the NIC's rate for verbs, unknown for tcp)")
	fs.StringVar(&p.RDMADevice, "rdma-device", rdma.AutoDevice, peerflag.RDMADeviceUsage)
	fs.IntVar(&p.GIDIndex, "gid-index", o.GIDIndex, peerflag.GIDIndexUsage)
	peerflag.AddIBQoS(fs, &p.IBTC, &p.IBSL)
	fs.Uint64Var(&p.Seed, "seed", o.Seed, "seed of chunk placement")
	fs.StringVar(&p.DstMem, "dst-mem", DstHost, "where reads land: host, or gpu (device memory through the cuda backend: GPUDirect on verbs when it registers, else a pinned bounce buffer + H2D, timed together; the path column gets +gpudirect or +bounce)")
	cli.AddIdleTimeout(fs, &p.IdleTimeout)
}

// Options turns the shared flags into options, adding every problem to
// errs; getenv reads the run token where --token is not given.
func (f *Flags) Options(errs *[]error, getenv func(string) string) Options {
	o := f.Opts
	if f.sizes != "" {
		o.Sizes = cli.ListFlag(errs, "sizes", f.sizes, func(s string) (int64, error) { return units.ParseBytes(strings.TrimSpace(s)) }, 1)
	}
	o.Layouts = cli.ListFlag(errs, "layout", f.layouts, cli.Trimmed, Layerwise)
	var err error
	if o.Geometry, err = f.model.Geometry(); err != nil {
		*errs = append(*errs, err)
		o.Geometry = f.Opts.Geometry
	}
	o.Policy, err = f.policy.Policy()
	*errs = append(*errs, err)
	o.Token = f.token.Value(getenv)
	*errs = append(*errs, f.token.Check(getenv))
	return o
}
