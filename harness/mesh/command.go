package mesh

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/peer/peerflag"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/tiers/tierflag"
	"github.com/kvtier/kvtier/xfer"
)

// commandFlags are the flags of kvtier mesh.
type commandFlags struct {
	call               *cli.Call
	out                cli.OutputFlags
	mb2                xfer.Flags
	ov                 Overrides
	pattern, mem, pool string
	listen             string
	directions         string
	gpu                int
	peerCopy           bool
	rendezvous         time.Duration
}

// commandDefaults are MB2's defaults with a lighter sweep: a matrix has
// n(n-1) pairs.
func commandDefaults() xfer.Options {
	o := xfer.DefaultOptions()
	o.Sizes = []int64{64 << 20, 256 << 20, 1 << 30}
	o.Layouts = []string{xfer.Blockwise}
	return o
}

// Bind adds the flags to fs.
func (f *commandFlags) Bind(fs *pflag.FlagSet, c *cli.Call) {
	f.call = c
	f.ov = NoOverrides()
	f.out.Add(fs)
	f.mb2.Add(fs, commandDefaults(), "transfer sizes (default 64MiB,256MiB,1GiB)")
	fs.StringVar(&f.directions, "direction", "load", tierflag.DirectionUsage+"; load: each rank reads from the others' pools, store: it writes into them (every rank's pool then accepts writes)")
	fs.StringVar(&f.pattern, "pattern", Pairwise, "pairwise (one pair moves data at a time) or ring (every rank reads from rank+1 at once)")
	fs.StringVar(&f.mem, "mem", peer.HostMem, "pool memory of every rank: host, or gpu (device memory of the rank's GPU)")
	fs.StringVar(&f.pool, "pool", "", "pool size per rank (default: the largest size and a quarter, within free memory shared by the node's ranks)")
	fs.IntVar(&f.gpu, "gpu", -1, "CUDA device ordinal of this rank (-1: its local rank)")
	fs.StringVar(&f.listen, "listen", "", "HOST[:PORT] this rank's pool listens on (default: the address it reaches the coordinator from, any free port)")
	fs.BoolVar(&f.peerCopy, "intra-peer-copy", false, "also time intra-node pairs over the GPUs' peer path (rows path=peercopy; skipped without two GPUs in one process)")
	f.rendezvous = 60 * time.Second
	fs.Var(cli.DurationValue{D: &f.rendezvous}, "rendezvous-timeout", "how long ranks wait for each other at the start")
	fs.StringVar(&f.ov.Coordinator, "coordinator", "", "HOST:PORT of rank 0 (default: MASTER_ADDR:MASTER_PORT, else the first node of SLURM_STEP_NODELIST)")
	fs.StringVar(&f.ov.Launcher, "launcher", "", "launcher whose environment gives rank and world size: "+strings.Join(Launchers, ", ")+", or flags (default: detected)")
	fs.IntVar(&f.ov.Rank, "rank", -1, "this process's rank (default: from the launcher)")
	fs.IntVar(&f.ov.Size, "world-size", -1, "number of ranks (default: from the launcher)")
	fs.IntVar(&f.ov.LocalRank, "local-rank", -1, "rank on this node (default: from the launcher)")
	fs.StringVar(&f.ov.Node, "node", "", "name of this rank's node; ranks with the same node are intra pairs (default: the launcher's node name, else the host name)")
}

// A plan is the checked input of kvtier mesh.
type plan struct {
	launch   Launch
	opts     xfer.Options
	cfg      Config
	out      cli.OutputFlags
	pattern  string
	mem      string
	pool     int64
	gpu      int
	listen   string
	peerCopy bool
}

// Resolve checks the flags and the launcher's environment, reporting
// every problem at once.
func (f *commandFlags) Resolve() (plan, error) {
	var errs []error
	p := plan{out: f.out, pattern: f.pattern, mem: f.mem, gpu: f.gpu, listen: f.listen, peerCopy: f.peerCopy}
	p.opts = f.mb2.Options(&errs, f.call.Getenv)
	p.opts.Directions = cli.ListFlag(&errs, "direction", f.directions, tierflag.ParseDirection, tiers.Load)
	rdv := f.rendezvous
	errs = append(errs, p.opts.Validate(), f.out.Check())
	if f.pattern != Pairwise && f.pattern != Ring {
		errs = append(errs, option.Errorf("pattern", "want pairwise or ring, got %q", f.pattern))
	}
	if f.mem != peer.HostMem && f.mem != peer.GPUMem {
		errs = append(errs, option.Errorf("mem", "want host or gpu, got %q", f.mem))
	}
	if f.pool != "" {
		p.pool = cli.SizeFlag(&errs, "pool", f.pool, xfer.MaxSize)
	}
	errs = append(errs, option.Range("gpu", f.gpu, -1, tierflag.MaxOrdinal, "-1: the local rank"))
	if p.opts.Token == "" {
		errs = append(errs, option.Errorf("token", "no run token: set %s in the job's environment (srun passes it; mpirun -x %s) or give --token", peerflag.EnvToken, peerflag.EnvToken))
	}
	var err error
	p.launch, err = Detect(Env{Getenv: f.call.Getenv, Hostname: os.Hostname, Expand: expandNodelist, NodeAddr: slurmNodeAddr}, f.ov)
	errs = append(errs, err)
	settings := p.opts.Settings()
	maps.Copy(settings, map[string]string{"pattern": f.pattern, "mem": f.mem, "pool": f.pool, "intra_peer_copy": fmt.Sprint(f.peerCopy),
		"world_size": fmt.Sprint(p.launch.Size), "coordinator": p.launch.Coordinator})
	p.cfg = Config{Token: p.opts.Token, RendezvousTimeout: rdv, IdleTimeout: p.opts.IdleTimeout, Settings: settings}
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
	return ExpandHostlist(list)
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

// runCommand runs one rank of kvtier mesh.
func runCommand(ctx context.Context, c *cli.Call, f *commandFlags, p plan) int {
	p.cfg.Log = c.Stderr
	c.Logf("%s", p.launch)
	r, code := openProcess(ctx, c, p)
	if r == nil {
		return code
	}
	defer r.close()
	if p.launch.Rank == 0 {
		return r.coordinate(ctx, c, p)
	}
	// Rank 0's run lifecycle starts its progress; the others' here.
	progress := harness.ProgressOf(c.Stderr)
	progress.Start(c.Name, p.out.Quiet)
	defer progress.Stop()
	return r.serve(ctx, c, p)
}

// launcherEnv is LauncherEnv as the command's environment.
func launcherEnv() []cli.EnvVar {
	out := make([]cli.EnvVar, len(LauncherEnv))
	for i, name := range LauncherEnv {
		out[i] = cli.EnvVar{Name: name, Flag: "rank, --size, --coordinator",
			Meaning: "rank, size and coordinator from the launcher (srun, mpirun, torchrun)"}
	}
	return out
}

// Command is kvtier mesh.
var Command = cli.Register(&cli.Command{Name: "mesh", Order: 60, Run: cli.Bound(runCommand), Env: launcherEnv(),
	Summary: "the transfer matrix between every pair of ranks, under srun, mpirun or torchrun",
	Usage:   "Usage: kvtier mesh [flags]   (once per rank, under srun, mpirun or a torchrun-style launcher)\n\nThe KV transfer matrix between every pair of ranks, intra- and inter-node: each rank serves a pool,\nrank 0 schedules the pairs and writes mesh.csv, mesh_matrix.csv, mesh_ranks.json, plots and the manifest.\nEvery rank needs the same run token (KVTIER_TOKEN or --token)."})
