package mesh

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/option"
)

// Launchers a rank can be started by (the launcher column and the
// manifest's launcher setting).
const (
	LauncherSlurm    = "slurm"    // srun: SLURM_PROCID, SLURM_NTASKS, ...
	LauncherOpenMPI  = "openmpi"  // mpirun: OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK
	LauncherPMI      = "pmi"      // PMI_RANK or PMIX_RANK, PMI_SIZE (MPICH's hydra, PMIx launchers)
	LauncherTorchrun = "torchrun" // RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
	LauncherFlags    = "flags"    // no launcher: --rank and --world-size
)

// Launchers lists the launchers in the order Detect tries them.
var Launchers = []string{LauncherSlurm, LauncherOpenMPI, LauncherPMI, LauncherTorchrun}

// DefaultPort is the coordinator's port when only its host is known;
// under Slurm it is offset by the job and step ids (mod 1000) so that
// job steps sharing a first node do not collide.
const DefaultPort = 29500

// A Launch is what a rank learnt from its launcher and the flags.
type Launch struct {
	Launcher  string `json:"launcher"`
	Rank      int    `json:"rank"`
	Size      int    `json:"world_size"`
	LocalRank int    `json:"local_rank"`
	LocalSize int    `json:"local_size,omitempty"` // ranks on this node, 0 unknown
	// Node names the node: the launcher's name for it (SLURMD_NODENAME),
	// else the host name. Ranks with the same node are intra-node pairs.
	Node string `json:"node"`
	// Nodes is Slurm's step node list, expanded.
	Nodes []string `json:"nodes,omitempty"`
	// Coordinator is rank 0's HOST:PORT and CoordinatorFrom where it came
	// from: flag, MASTER_ADDR, or slurm nodelist.
	Coordinator     string `json:"coordinator"`
	CoordinatorFrom string `json:"coordinator_from"`
	Job             string `json:"job,omitempty"` // the launcher's job (and step) id
}

// Overrides are the flags that override what the launcher says; -1 and
// "" leave a value to the launcher.
type Overrides struct {
	Launcher              string // force one of Launchers, or "flags"
	Rank, Size, LocalRank int
	Node, Coordinator     string
}

// NoOverrides leaves everything to the launcher.
func NoOverrides() Overrides { return Overrides{Rank: -1, Size: -1, LocalRank: -1} }

// LauncherEnv lists every variable Detect reads, for the manifest of a
// run (a test holds Detect to it).
var LauncherEnv = []string{
	"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_JOB_ID", "SLURM_STEP_ID",
	"SLURM_STEP_TASKS_PER_NODE", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURMD_NODENAME",
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_ess_base_jobid",
	"PMI_RANK", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
	"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT",
}

// An Env is where Detect reads the launcher's environment: cmd passes
// os.Getenv, os.Hostname and ExpandNodelist; tests pass maps.
type Env struct {
	Getenv   func(string) string
	Hostname func() (string, error)
	// Expand expands a Slurm hostlist (scontrol where present, else
	// ExpandHostlist); nil uses ExpandHostlist.
	Expand func(string) ([]string, error)
	// NodeAddr gives the address Slurm reaches a node at (its NodeAddr,
	// which may differ from its name); nil, or an error, keeps the name.
	NodeAddr func(string) (string, error)
}

// Detect works out this rank's place in the mesh from env and the
// overrides, and says what is missing or wrong as option.Errors naming
// the flags that would supply it.
func Detect(env Env, ov Overrides) (Launch, error) {
	get := env.Getenv
	l := Launch{Launcher: ov.Launcher, Rank: -1, Size: -1}
	if l.Launcher == "" {
		l.Launcher = detectLauncher(get)
	}
	var errs []error
	switch l.Launcher {
	case LauncherSlurm:
		errs = append(errs, fromSlurm(env, &l))
	case LauncherOpenMPI:
		errs = append(errs, fromEnv(get, &l, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"))
		l.Job = get("OMPI_MCA_ess_base_jobid")
	case LauncherPMI:
		rank := "PMI_RANK"
		if get(rank) == "" {
			rank = "PMIX_RANK"
		}
		errs = append(errs, fromEnv(get, &l, rank, "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"))
	case LauncherTorchrun:
		errs = append(errs, fromEnv(get, &l, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"))
		l.Job = get("TORCHELASTIC_RUN_ID")
	case LauncherFlags:
	default:
		errs = append(errs, option.Errorf("launcher", "unknown launcher %q (known: %s, %s)", l.Launcher, strings.Join(Launchers, ", "), LauncherFlags))
	}
	l.apply(ov)
	errs = append(errs, ov.check(), l.node(env, ov), l.coordinator(env, ov), l.check())
	return l, errors.Join(errs...)
}

// detectLauncher names the first launcher whose variables are set, else
// flags.
func detectLauncher(get func(string) string) string {
	switch {
	case get("SLURM_PROCID") != "" && get("SLURM_NTASKS") != "":
		return LauncherSlurm
	case get("OMPI_COMM_WORLD_RANK") != "":
		return LauncherOpenMPI
	case get("PMI_RANK") != "" || get("PMIX_RANK") != "":
		return LauncherPMI
	case get("RANK") != "" && get("WORLD_SIZE") != "":
		return LauncherTorchrun
	}
	return LauncherFlags
}

// fromEnv reads rank, size, local rank and local size from the named
// variables (an empty name or variable leaves the value unknown).
func fromEnv(get func(string) string, l *Launch, rank, size, local, localSize string) error {
	var errs []error
	read := func(name string, dst *int) {
		if name == "" || get(name) == "" {
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(get(name)))
		if err != nil || n < 0 {
			errs = append(errs, option.Errorf("launcher", "%s=%s is not a number", name, quoteShort(get(name))))
			return
		}
		*dst = n
	}
	read(rank, &l.Rank)
	read(size, &l.Size)
	read(local, &l.LocalRank)
	read(localSize, &l.LocalSize)
	return errors.Join(errs...)
}

// fromSlurm reads srun's variables and expands the step's node list.
func fromSlurm(env Env, l *Launch) error {
	get := env.Getenv
	err := fromEnv(get, l, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "")
	l.Job = get("SLURM_JOB_ID")
	if s := get("SLURM_STEP_ID"); s != "" {
		l.Job += "." + s
	}
	if tpn := get("SLURM_STEP_TASKS_PER_NODE"); tpn != "" {
		if id, e := strconv.Atoi(get("SLURM_NODEID")); e == nil {
			l.LocalSize = tasksOnNode(tpn, id)
		}
	}
	list := get("SLURM_STEP_NODELIST")
	if list == "" {
		list = get("SLURM_JOB_NODELIST")
	}
	if list == "" {
		return err
	}
	expand := env.Expand
	if expand == nil {
		expand = ExpandHostlist
	}
	nodes, xerr := expand(list)
	if xerr != nil {
		return errors.Join(err, option.Errorf("launcher", "SLURM_STEP_NODELIST: %v", xerr))
	}
	l.Nodes = nodes
	return err
}

// tasksOnNode reads Slurm's tasks-per-node list ("2(x3),1") for node id.
func tasksOnNode(list string, id int) int {
	for part := range strings.SplitSeq(list, ",") {
		n, reps := part, 1
		if i := strings.Index(part, "(x"); i >= 0 && strings.HasSuffix(part, ")") {
			n = part[:i]
			reps, _ = strconv.Atoi(part[i+2 : len(part)-1])
		}
		count, err := strconv.Atoi(n)
		if err != nil || reps < 1 {
			return 0
		}
		if id < reps {
			return count
		}
		id -= reps
	}
	return 0
}

// apply lets the flags override the launcher.
func (l *Launch) apply(ov Overrides) {
	if ov.Rank >= 0 {
		l.Rank = ov.Rank
	}
	if ov.Size >= 0 {
		l.Size = ov.Size
	}
	if ov.LocalRank >= 0 {
		l.LocalRank = ov.LocalRank
	}
}

// node names this rank's node: --node, the launcher's node name, or the
// host name.
func (l *Launch) node(env Env, ov Overrides) error {
	switch {
	case ov.Node != "":
		l.Node = ov.Node
	case l.Launcher == LauncherSlurm && env.Getenv("SLURMD_NODENAME") != "":
		l.Node = env.Getenv("SLURMD_NODENAME")
	default:
		h, err := env.Hostname()
		if err != nil {
			return option.Errorf("node", "no host name (%v): name the node", err)
		}
		l.Node = h
	}
	return nil
}

// coordinator finds rank 0's address: --coordinator, MASTER_ADDR and
// MASTER_PORT, or the first host of Slurm's node list (at its NodeAddr).
func (l *Launch) coordinator(env Env, ov Overrides) error {
	get := env.Getenv
	switch {
	case ov.Coordinator != "":
		l.Coordinator, l.CoordinatorFrom = ov.Coordinator, "flag"
	case get("MASTER_ADDR") != "":
		port := get("MASTER_PORT")
		if port == "" {
			port = strconv.Itoa(DefaultPort)
		}
		l.Coordinator, l.CoordinatorFrom = net.JoinHostPort(get("MASTER_ADDR"), port), "MASTER_ADDR"
	case len(l.Nodes) > 0:
		job, _ := strconv.Atoi(get("SLURM_JOB_ID"))
		step, _ := strconv.Atoi(get("SLURM_STEP_ID"))
		port := DefaultPort + (job+step)%1000
		host := l.Nodes[0]
		if env.NodeAddr != nil {
			if a, err := env.NodeAddr(host); err == nil && a != "" {
				host = a
			}
		}
		l.Coordinator, l.CoordinatorFrom = net.JoinHostPort(host, strconv.Itoa(port)), "slurm nodelist"
	default:
		return option.Errorf("coordinator", "no coordinator: give HOST:PORT of rank 0, or set MASTER_ADDR and MASTER_PORT")
	}
	host, port, err := net.SplitHostPort(l.Coordinator)
	if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		return option.Errorf("coordinator", "%s (from %s): want HOST:PORT", quoteShort(l.Coordinator), l.CoordinatorFrom)
	}
	return nil
}

// check says what is still unknown or out of range.
func (l *Launch) check() error {
	var errs []error
	if l.Size < 1 {
		errs = append(errs, option.Errorf("world-size", "unknown (launcher %s): give the number of ranks", l.Launcher))
	} else if l.Size > MaxRanks {
		errs = append(errs, option.Errorf("world-size", "%d ranks, at most %d", l.Size, MaxRanks))
	}
	if l.Rank < 0 {
		errs = append(errs, option.Errorf("rank", "unknown (launcher %s): give this process's rank", l.Launcher))
	} else if l.Size >= 1 && l.Rank >= l.Size {
		errs = append(errs, option.Errorf("rank", "%d is not below the world size %d", l.Rank, l.Size))
	}
	if l.LocalRank < 0 {
		l.LocalRank = 0
	} else if l.LocalRank >= MaxRanks {
		errs = append(errs, option.Errorf("local-rank", "%d, at most %d", l.LocalRank, MaxRanks-1))
	}
	return errors.Join(errs...)
}

// check refuses overrides that are neither -1 (from the launcher) nor a
// rank, world size or local rank up to MaxRanks.
func (ov Overrides) check() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"rank", ov.Rank}, {"world-size", ov.Size}, {"local-rank", ov.LocalRank}} {
		errs = append(errs, option.Range(f.name, f.v, -1, MaxRanks, "-1: from the launcher"))
	}
	return errors.Join(errs...)
}

// MaxRanks bounds the world size of a mesh.
const MaxRanks = 4096

// String is the rank's one-line description for logs.
func (l Launch) String() string {
	return fmt.Sprintf("rank %d of %d (local %d) on %s, launcher %s, coordinator %s (%s)",
		l.Rank, l.Size, l.LocalRank, l.Node, l.Launcher, l.Coordinator, l.CoordinatorFrom)
}
