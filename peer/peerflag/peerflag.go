// Package peerflag holds the flag groups of kvtier's peer: the run token
// every pool and coordinator demands (TokenFlags, PeerGroup) and the RDMA
// QoS of the queue pairs (AddIBQoS, QoSGroup, read from NCCL's variables
// only by the commands that take those flags); with what the commands
// that reach a peer share: the usage of the RDMA endpoint flags, the
// reachability and verbs checks they make before they write anything,
// and the test-only fault switches. It sits beside package peer, as the
// go command keeps AddBuildFlags beside its build, so that package cli,
// and the suites that move no device bytes, link no verbs.
package peerflag

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/rdma"
)

// PeerGroup is --token, the run token.
var PeerGroup = cli.NewGroup(cli.FlagGroup{Name: "peer", Heading: "Peer", Order: 60,
	Env: []cli.EnvVar{{Name: EnvToken, Flag: "token", Meaning: "the run token of pools and coordinators", Secret: true}}})

// QoSGroup is --ib-tc and --ib-sl, the RDMA QoS of the queue pairs: a
// command that binds it reads NCCL_IB_TC and NCCL_IB_SL for the flags its
// command line left out (IBQoSFromEnv).
var QoSGroup = cli.NewGroup(cli.FlagGroup{Name: "ibqos", Heading: "RDMA QoS", Order: 70,
	Env: []cli.EnvVar{
		{Name: "NCCL_IB_TC", Flag: "ib-tc", Meaning: "RoCE traffic class of the QPs, as NCCL reads it"},
		{Name: "NCCL_IB_SL", Flag: "ib-sl", Meaning: "InfiniBand service level of the QPs, as NCCL reads it"},
	},
	FromEnv: IBQoSFromEnv,
})

// TokenFlags is --token: the run token kvtier mesh's ranks and kvtier
// serve's pools demand of every connection, and that kvtier transfer
// sends. KVTIER_TOKEN stands in for the flag (launchers pass the
// environment: srun by default, mpirun with -x KVTIER_TOKEN).
type TokenFlags struct{ Token string }

// EnvToken names the environment variable of the run token.
const EnvToken = "KVTIER_TOKEN"

// Add adds --token to fs.
func (f *TokenFlags) Add(fs *pflag.FlagSet) {
	PeerGroup.Bind(fs, func(fs *pflag.FlagSet) {
		fs.StringVar(&f.Token, "token", "", "run token every connection to a pool or coordinator must carry (default $"+EnvToken+")")
	})
}

// Value is the flag, else the environment's token (getenv reads it).
func (f *TokenFlags) Value(getenv func(string) string) string {
	if f.Token != "" {
		return f.Token
	}
	return getenv(EnvToken)
}

// Check refuses a token (Value) longer than a hello can carry, naming
// where it came from.
func (f *TokenFlags) Check(getenv func(string) string) error {
	err := peer.CheckToken(f.Value(getenv))
	if err != nil && f.Token == "" {
		return option.Errorf("token", "$%s: %w", EnvToken, err)
	}
	return option.Wrap("token", err)
}

// ibQoSEnv maps the RDMA QoS flags to the environment variables NCCL
// users already set for the same meaning; a variable is read only when
// its flag is absent from the command line.
var ibQoSEnv = []struct {
	flag, env string
	max       int
}{
	{"ib-tc", "NCCL_IB_TC", rdma.MaxTC},
	{"ib-sl", "NCCL_IB_SL", rdma.MaxSL},
}

// AddIBQoS registers --ib-tc and --ib-sl into tc and sl.
func AddIBQoS(fs *pflag.FlagSet, tc, sl *int) {
	QoSGroup.Bind(fs, func(fs *pflag.FlagSet) {
		fs.IntVar(tc, "ib-tc", 0, "RoCE traffic class of the QPs (0-255: DSCP<<2 | ECN, e.g. 106 for DSCP 26 with ECN; default $NCCL_IB_TC, else 0)")
		fs.IntVar(sl, "ib-sl", 0, "InfiniBand service level of the QPs (0-15; default $NCCL_IB_SL, else 0)")
	})
}

// IBQoSFromEnv sets --ib-tc and --ib-sl, where fs has them and the
// command line did not give them, from NCCL_IB_TC and NCCL_IB_SL (getenv
// reads the environment), unless fs's --transport is tcp. -1, NCCL's
// default, is unset; any other value that is no integer in range is an
// error naming the variable.
func IBQoSFromEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	if t := fs.Lookup("transport"); t != nil && t.Value.String() == peer.TCP {
		return nil // no queue pair to carry them (peer.CheckQoS)
	}
	for _, q := range ibQoSEnv {
		f := fs.Lookup(q.flag)
		if f == nil || f.Changed {
			continue
		}
		v := strings.TrimSpace(getenv(q.env))
		if v == "" || v == "-1" {
			continue // NCCL's own "unset" (its default of -1)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > q.max {
			return fmt.Errorf("%s=%q: want an integer 0-%d (--%s)", q.env, v, q.max, q.flag)
		}
		if err := f.Value.Set(v); err != nil {
			return fmt.Errorf("%s: %w", q.env, err)
		}
	}
	return nil
}

// Usage of the RDMA endpoint flags every command shares.
const (
	RDMADeviceUsage = "RDMA device, e.g. mlx5_0; auto: the active port nearest the GPU in use (same PCIe switch, then root complex, then NUMA node), else the first active port (column device_reason says which and why)"
	GIDIndexUsage   = "GID index (-1: RoCE v2 GIDs agreed with the peer, IPv4-mapped preferred, one family on both ends)"
)

// Unreachable returns the exit status of a command whose peer check
// failed with err: interrupted where Ctrl-C ended the handshake, bad
// input otherwise.
func Unreachable(ctx context.Context, c *cli.Call, err error) int {
	if ctx.Err() != nil {
		c.Logf("interrupted while connecting to the peer; nothing written")
		return cli.ExitInterrupted
	}
	return c.UsageErr(err)
}

// PeerReachable reports a kvtier serve peer that does not complete a
// handshake within the client's bound of 10 s (docs/design.md; nothing
// listening, or not a kvtier peer), naming the flag; commands check it before they create a
// results directory. Every peer also serves TCP clients, so TCP asks for
// all.
func PeerReachable(ctx context.Context, addr, token string) error {
	c, err := peer.Dial(ctx, addr, peer.DialOptions{Transport: peer.TCP, Token: token})
	if err != nil {
		return option.Errorf("peer", "%s: unreachable: %w", addr, err)
	}
	return c.Close()
}

// VerbsProblem phrases an endpoint failure for a one-line error: a
// missing library or device always says "no RDMA device".
func VerbsProblem(err error) error {
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

// VerbsReady says whether this machine can open the verbs endpoint cfg
// describes, as a one-line reason ("no RDMA device", a GID index that
// does not exist) when it cannot; what of cfg will not apply as asked
// (rdma.Endpoint.Warnings: --ib-sl above 7 on RoCE) is a warning line
// on warn.
func VerbsReady(cfg rdma.Config, warn io.Writer) error {
	names, err := rdma.DeviceNames(cfg.Library)
	if err != nil {
		return VerbsProblem(err)
	}
	if len(names) == 0 {
		return VerbsProblem(rdma.ErrNoDevice)
	}
	ep, err := rdma.Open(cfg)
	if err != nil {
		return VerbsProblem(err)
	}
	for _, w := range ep.Warnings() {
		fmt.Fprintf(warn, "kvtier: warning: %s\n", w)
	}
	return ep.Close()
}
