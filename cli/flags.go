package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
)

// The flag groups below are shared by every measuring command, so that
// one flag name has one meaning in every command (the groups of one
// concern sit beside it: tierflag, peerflag, servingflag). A group adds
// its flags to a command's FlagSet and turns their raw values into
// options; problems come back as option.Errors naming the flag without
// its dashes, and UsageErr prints them as "--name: problem".

// The groups of this package.
var (
	// OutputGroup is --out, --overwrite and --quiet.
	OutputGroup = NewGroup(FlagGroup{Name: "output", Heading: "Output", Order: 10})
	// PolicyGroup is --reps, --warmup and --budget.
	PolicyGroup = NewGroup(FlagGroup{Name: "policy", Heading: "Sampling", Order: 20})
	// ModelGroup is --model, --model-config, --block-size, --tp and
	// --kv-dtype.
	ModelGroup = NewGroup(FlagGroup{Name: "model", Heading: "Model", Order: 30})
)

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
	OutputGroup.Bind(fs, f.add)
}

func (f *OutputFlags) add(fs *pflag.FlagSet) {
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

// CheckOutDir says whether dir could be created and written, leaving
// nothing behind: the nearest existing ancestor must be a directory a
// directory can be created in (tryCreate).
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
			return tryCreate(dir, p)
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

// tryCreate says whether a directory can be created in parent, the
// nearest existing ancestor of dir, by creating and removing one:
// permission bits do not say it for root, nor on /proc or a read-only
// mount.
func tryCreate(dir, parent string) error {
	if err := unix.Access(parent, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("%s: %s is not writable: %w", dir, parent, err)
	}
	probe, err := os.MkdirTemp(parent, ".kvtier-out-check-")
	if err != nil {
		return fmt.Errorf("%s: nothing can be created in %s: %w", dir, parent, errors.Unwrap(err))
	}
	return os.Remove(probe)
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
	ModelGroup.Bind(fs, func(fs *pflag.FlagSet) {
		fs.IntVar(&f.BlockSize, "block-size", kv.DefaultBlockTokens, "tokens per KV block")
	})
}

// AddModel adds --model, --model-config, --tp and --kv-dtype, for the
// commands whose block size comes from elsewhere (a trace's,
// --trace-block).
func (f *ModelFlags) AddModel(fs *pflag.FlagSet) {
	f.BlockSize = kv.DefaultBlockTokens
	ModelGroup.Bind(fs, f.addModel)
}

func (f *ModelFlags) addModel(fs *pflag.FlagSet) {
	fs.StringVar(&f.Model, "model", "", "model preset whose KV geometry is used ("+strings.Join(kv.ModelNames(), ", ")+"; default "+kv.DefaultModel+")")
	fs.StringVar(&f.Config, "model-config", "", "Hugging Face config.json of the model (or its directory), instead of --model")
	fs.IntVar(&f.TP, "tp", 1, "tensor-parallel GPUs: KV bytes are one GPU's, max(1, KV heads/N) heads as vLLM shards them (N divides the KV heads or is a multiple of them)")
	fs.StringVar(&f.KVDType, "kv-dtype", "", "KV cache dtype: bf16, fp16, fp8 (vLLM's fp8_e4m3, fp8_e5m2: one byte each; fp8 halves every byte count) or auto (the model's dtype, the default)")
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
	PolicyGroup.Bind(fs, func(fs *pflag.FlagSet) {
		fs.IntVar(&f.Reps, "reps", d.Reps, "measured samples per configuration")
		fs.IntVar(&f.Warmup, "warmup", d.Warmup, harness.WarmupUsage)
		if withBudget {
			f.Budget = d.Budget
			fs.Var(DurationValue{D: &f.Budget}, "budget", "time budget of one configuration: fewer reps, or a skipped row, beyond it")
		}
	})
}

// Policy is the sampling policy the flags name. (The flags parse their
// values; the error is Policy's Validate's to give.)
func (f *PolicyFlags) Policy() (harness.Policy, error) {
	return harness.Policy{Reps: f.Reps, Warmup: f.Warmup, Budget: f.Budget}, nil
}

// DefaultReps is --reps wherever repetitions are counted: five samples a
// side is the fewest with which kvtier compare's rank test can reach
// p <= 0.05, so two runs with default flags can be compared.
const DefaultReps = 5
