package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/tiers"
)

// The flag groups below are shared by the commands that take them, so
// that one flag name has one meaning in every command. A group adds its
// flags to a command's FlagSet and turns their raw values into options;
// problems come back as option.Errors naming the flag without its
// dashes, and UsageErr prints them as "--name: problem".

// OutputFlags are --out, --overwrite and --quiet: the results directory
// of a measuring command and what it says while it measures.
type OutputFlags struct {
	Dir       string
	Overwrite bool
	Quiet     bool // no progress (harness.Progress) on stderr

	fs *pflag.FlagSet // the command's, for the environment it reads
}

// Add adds --out, --overwrite and --quiet to fs.
func (f *OutputFlags) Add(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.Dir, "out", "", "results directory (default results/<UTC start time>, a fresh one for every run)")
	fs.BoolVar(&f.Overwrite, "overwrite", false, "allow an --out that already holds results: the files this run writes replace theirs")
	fs.BoolVarP(&f.Quiet, "quiet", "q", false, "no progress on stderr ([i/N] configurations, elapsed, ETA, one line per row measured); messages and the final lines stay")
}

// Check says whether the directory could be created and written, and
// whether it holds results that may not be replaced.
func (f *OutputFlags) Check() error {
	if f.Dir == "" {
		return nil
	}
	if err := CheckOutDir(f.Dir); err != nil {
		return option.Wrap("out", err)
	}
	if held := harness.HeldResults(f.Dir); held != "" && !f.Overwrite {
		return option.Errorf("out", "%s already holds results (%s): give another --out, or --overwrite to replace them", f.Dir, held)
	}
	return nil
}

// OutDir is where the run writes.
func (f *OutputFlags) OutDir() harness.OutDir {
	if f.Dir == "" {
		return harness.OutDir{Path: defaultOut(), Unique: true}
	}
	return harness.OutDir{Path: f.Dir, Overwrite: f.Overwrite}
}

// defaultOut is the default --out of the measuring commands: a directory
// under results/ named for the UTC time the command started.
func defaultOut() string {
	return filepath.Join("results", time.Now().UTC().Format("20060102T150405Z")) // the directory's name, not a measurement
}

// CheckOutDir says whether dir could be created and written, without
// creating anything: the nearest existing ancestor must be a writable
// directory.
func CheckOutDir(dir string) error {
	if dir == "" {
		return errors.New("empty directory name")
	}
	p := filepath.Clean(dir)
	for {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s: %s is not a directory", dir, p)
			}
			if err := unix.Access(p, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Errorf("%s: %s is not writable: %w", dir, p, err)
			}
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) {
			return fmt.Errorf("%s: %w", dir, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return fmt.Errorf("%s: no existing parent directory", dir)
		}
		p = parent
	}
}

// ModelFlags are --model, --model-config, --block-size, --tp and
// --kv-dtype: the KV geometry of a model preset or a Hugging Face
// config.json, as one GPU of a tensor-parallel group holds it.
type ModelFlags struct {
	Model, Config, KVDType string
	BlockSize, TP          int
}

// Add adds the group's flags to fs.
func (f *ModelFlags) Add(fs *pflag.FlagSet) {
	f.AddModel(fs)
	fs.IntVar(&f.BlockSize, "block-size", kv.DefaultBlockTokens, "tokens per KV block")
}

// AddModel adds --model, --model-config, --tp and --kv-dtype, for the
// commands whose block size comes from elsewhere (a trace's,
// --trace-block).
func (f *ModelFlags) AddModel(fs *pflag.FlagSet) {
	f.BlockSize = kv.DefaultBlockTokens
	fs.StringVar(&f.Model, "model", "", "model preset whose KV geometry is used ("+strings.Join(kv.ModelNames(), ", ")+"; default "+kv.DefaultModel+")")
	fs.StringVar(&f.Config, "model-config", "", "Hugging Face config.json of the model (or its directory), instead of --model")
	fs.IntVar(&f.TP, "tp", 1, "tensor-parallel GPUs: KV bytes are one GPU's, 1/N of the KV heads (N must divide them)")
	fs.StringVar(&f.KVDType, "kv-dtype", "", "KV cache dtype: bf16, fp16 or fp8 (fp8 halves every byte count; default the model's dtype)")
}

// Geometry is the geometry the flags name.
func (f *ModelFlags) Geometry() (kv.Geometry, error) {
	g, err := kv.Resolve(f.Model, f.Config, f.BlockSize)
	if err != nil {
		return g, err
	}
	return g.Shard(f.TP, f.KVDType)
}

// PolicyFlags are --reps, --warmup and --budget: how each configuration
// is sampled.
type PolicyFlags struct {
	Reps, Warmup int
	Budget       time.Duration
}

// Add adds --reps, --warmup and, withBudget, --budget, defaulting to d.
func (f *PolicyFlags) Add(fs *pflag.FlagSet, d harness.Policy, withBudget bool) {
	fs.IntVar(&f.Reps, "reps", d.Reps, "measured samples per configuration")
	fs.IntVar(&f.Warmup, "warmup", d.Warmup, harness.WarmupUsage)
	if withBudget {
		f.Budget = d.Budget
		fs.Var(DurationValue{D: &f.Budget}, "budget", "time budget of one configuration: fewer reps, or a skipped row, beyond it")
	}
}

// Policy is the sampling policy the flags name. (The flags parse their
// values; the error is Policy's Validate's to give.)
func (f *PolicyFlags) Policy() (harness.Policy, error) {
	return harness.Policy{Reps: f.Reps, Warmup: f.Warmup, Budget: f.Budget}, nil
}

// MaxOrdinal bounds a GPU ordinal (--gpu) and a NUMA node (--numa).
const MaxOrdinal = 1023

// BackendFlags are --backend, --gpu and --numa: which backend measures.
type BackendFlags struct {
	Name      string
	GPU, NUMA int
	All       bool // --gpu all (kvtier sweep: every GPU at once)
}

// Add adds the group's flags to fs.
func (f *BackendFlags) Add(fs *pflag.FlagSet) {
	fs.StringVar(&f.Name, "backend", "auto", "compute backend: auto, "+strings.Join(tiers.BackendNames(), ", ")+" (auto picks the best that opens and says why the others did not)")
	fs.Var(&gpuFlag{&f.GPU, &f.All}, "gpu", "CUDA device ordinal, or all: the host and hbm tiers on every GPU at once, with per-GPU and aggregate rows")
	f.NUMA = tiers.NUMAAuto
	fs.Var((*NUMAFlag)(&f.NUMA), "numa", "NUMA node for host pools: auto (the GPU's node), a node, or -1 (left to the kernel)")
}

// gpuFlag is --gpu of kvtier sweep: an ordinal, or "all".
type gpuFlag struct {
	n   *int
	all *bool
}

func (g *gpuFlag) String() string {
	if g.n == nil {
		return "0"
	}
	if *g.all {
		return "all"
	}
	return strconv.Itoa(*g.n)
}

func (g *gpuFlag) Set(s string) error {
	if s == "all" {
		*g.n, *g.all = 0, true
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a GPU ordinal or all, got %q", s)
	}
	*g.n, *g.all = v, false
	return nil
}

func (g *gpuFlag) Type() string { return "ordinal|all" }

// NUMAFlag is --numa: "auto" (tiers.NUMAAuto), a node, or -1.
type NUMAFlag int

func (n *NUMAFlag) String() string {
	if *n == tiers.NUMAAuto {
		return "auto"
	}
	return strconv.Itoa(int(*n))
}

// Set parses auto, -1 or a node.
func (n *NUMAFlag) Set(s string) error {
	if s == "auto" {
		*n = tiers.NUMAAuto
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < -1 || v > MaxOrdinal {
		return fmt.Errorf("want auto, -1 or a node 0 to %d, got %q", MaxOrdinal, s)
	}
	*n = NUMAFlag(v)
	return nil
}

// Type names the flag's values in -h.
func (n *NUMAFlag) Type() string { return "auto|node" }

// Validate reports an unknown backend and an ordinal out of range.
func (f *BackendFlags) Validate() error {
	var errs []error
	if f.Name != "auto" && !slices.Contains(tiers.BackendNames(), f.Name) {
		errs = append(errs, option.Errorf("backend", "unknown backend %q (known: auto, %s)", f.Name, strings.Join(tiers.BackendNames(), ", ")))
	}
	errs = append(errs, option.Range("gpu", f.GPU, 0, MaxOrdinal), option.Range("numa", f.NUMA, tiers.NUMAAuto, MaxOrdinal, "-1: left to the kernel"))
	return errors.Join(errs...)
}

// Config returns the configuration backends open with: this group's
// device and node, the native libraries libs, and log.
func (f *BackendFlags) Config(log io.Writer, libs system.Libraries) tiers.BackendConfig {
	return tiers.BackendConfig{GPU: f.GPU, NUMA: f.NUMA, Log: log, LibCUDA: libs.CUDA, LibCUBLAS: libs.CUBLAS, LibCUFile: libs.CUFile, CUBLASDirs: libs.CUBLASDirs}
}

// TokenFlags is --token: the run token kvtier mesh's ranks and kvtier
// serve's pools demand of every connection, and that kvtier transfer
// sends. KVTIER_TOKEN stands in for the flag (launchers pass the
// environment: srun by default, mpirun with -x KVTIER_TOKEN).
type TokenFlags struct{ Token string }

// EnvToken names the environment variable of the run token.
const EnvToken = "KVTIER_TOKEN"

// Add adds --token to fs.
func (f *TokenFlags) Add(fs *pflag.FlagSet) {
	fs.StringVar(&f.Token, "token", "", "run token every connection to a pool or coordinator must carry (default $"+EnvToken+")")
}

// Value is the flag, else the environment's token (getenv reads it).
func (f *TokenFlags) Value(getenv func(string) string) string {
	if f.Token != "" {
		return f.Token
	}
	return getenv(EnvToken)
}

// DirectionUsage is the one meaning of --direction (sweep, transfer, mesh).
const DirectionUsage = "comma-separated directions: load (bring KV back from the tier or peer) and store (put it there)"

// ParseDirection parses one value of --direction.
func ParseDirection(s string) (tiers.Direction, error) {
	return tiers.ParseDirection(strings.TrimSpace(s))
}
