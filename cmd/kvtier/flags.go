package main

import (
	"errors"
	"fmt"
	"io"
	"math"
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
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// The flag groups below are shared by the commands that take them, so
// that one flag name has one meaning in every command. A group adds its
// flags to a command's FlagSet and turns their raw values into options;
// problems come back as option.Errors naming the flag without its
// dashes, and usageErr prints them as "--name: problem".

// outputFlags are --out and --overwrite: the results directory of a
// measuring command.
type outputFlags struct {
	dir       string
	overwrite bool
}

func (f *outputFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.dir, "out", "", "results directory (default results/<UTC start time>, a fresh one for every run)")
	fs.BoolVar(&f.overwrite, "overwrite", false, "allow an --out that already holds results: the files this run writes replace theirs")
}

// check says whether the directory could be created and written, and
// whether it holds results that may not be replaced.
func (f *outputFlags) check() error {
	if f.dir == "" {
		return nil
	}
	if err := checkOutDir(f.dir); err != nil {
		return option.Wrap("out", err)
	}
	if held := harness.HeldResults(f.dir); held != "" && !f.overwrite {
		return option.Errorf("out", "%s already holds results (%s): give another --out, or --overwrite to replace them", f.dir, held)
	}
	return nil
}

// outDir is where the run writes.
func (f *outputFlags) outDir() harness.OutDir {
	if f.dir == "" {
		return harness.OutDir{Path: defaultOut(), Unique: true}
	}
	return harness.OutDir{Path: f.dir, Overwrite: f.overwrite}
}

// defaultOut is the default --out of the measuring commands: a directory
// under results/ named for the UTC time the command started.
func defaultOut() string {
	return filepath.Join("results", time.Now().UTC().Format("20060102T150405Z"))
}

// checkOutDir says whether dir could be created and written, without
// creating anything: the nearest existing ancestor must be a writable
// directory.
func checkOutDir(dir string) error {
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

// modelFlags are --model, --model-config, --block-size, --tp and
// --kv-dtype: the KV geometry of a model preset or a Hugging Face
// config.json, as one GPU of a tensor-parallel group holds it.
type modelFlags struct {
	model, config, kvDType string
	blockSize, tp          int
}

func (f *modelFlags) add(fs *pflag.FlagSet) {
	f.addModel(fs)
	fs.IntVar(&f.blockSize, "block-size", kv.DefaultBlockTokens, "tokens per KV block")
}

// addModel adds --model, --model-config, --tp and --kv-dtype, for the
// commands whose block size comes from elsewhere (a trace's,
// --trace-block).
func (f *modelFlags) addModel(fs *pflag.FlagSet) {
	f.blockSize = kv.DefaultBlockTokens
	fs.StringVar(&f.model, "model", "", "model preset whose KV geometry is used ("+strings.Join(kv.ModelNames(), ", ")+"; default "+kv.DefaultModel+")")
	fs.StringVar(&f.config, "model-config", "", "Hugging Face config.json of the model (or its directory), instead of --model")
	fs.IntVar(&f.tp, "tp", 1, "tensor-parallel GPUs: KV bytes are one GPU's, 1/N of the KV heads (N must divide them)")
	fs.StringVar(&f.kvDType, "kv-dtype", "", "KV cache dtype: bf16, fp16 or fp8 (fp8 halves every byte count; default the model's dtype)")
}

func (f *modelFlags) geometry() (kv.Geometry, error) {
	g, err := kv.Resolve(f.model, f.config, f.blockSize)
	if err != nil {
		return g, err
	}
	return g.Shard(f.tp, f.kvDType)
}

// policyFlags are --reps, --warmup and --budget: how each configuration
// is sampled.
type policyFlags struct {
	reps, warmup int
	budget       string
}

func (f *policyFlags) add(fs *pflag.FlagSet, d harness.Policy, withBudget bool) {
	fs.IntVar(&f.reps, "reps", d.Reps, "measured samples per configuration")
	fs.IntVar(&f.warmup, "warmup", d.Warmup, "discarded warm-up samples per configuration")
	if withBudget {
		fs.StringVar(&f.budget, "budget", d.Budget.String(), "time budget of one configuration: fewer reps, or a skipped row, beyond it")
	}
}

func (f *policyFlags) policy() (harness.Policy, error) {
	p := harness.Policy{Reps: f.reps, Warmup: f.warmup}
	if f.budget == "" {
		return p, nil
	}
	d, err := parseDuration(f.budget)
	p.Budget = d
	return p, option.Wrap("budget", err)
}

// maxOrdinal bounds a GPU ordinal (--gpu) and a NUMA node (--numa).
const maxOrdinal = 1023

// serverFlags choose the vLLM server a client command measures:
// --base-url (vllm bench serve's name; --endpoint before, which is the
// API path there) or --sim (an embedded kvtier sim), --served-model-name,
// --idle-timeout and the removed --sim-time-scale.
type serverFlags struct {
	fs          *pflag.FlagSet // the command's, to tell whether --base-url was given
	baseURL     string
	model       string
	useSim      bool
	simScale    float64
	idle        time.Duration
	maxTimeouts int
}

// add adds the group's flags to fs; simUsage says what --sim measures.
func (f *serverFlags) add(fs *pflag.FlagSet, simUsage string) {
	f.fs = fs
	addBaseURL(fs, &f.baseURL, "base URL of the vLLM server measured, e.g. http://127.0.0.1:8000 (env KVTIER_ENDPOINT)")
	fs.BoolVar(&f.useSim, "sim", false, simUsage)
	addSimTimeScale(fs, &f.simScale)
	fs.StringVar(&f.model, "served-model-name", "", "served model name (default: the first of GET /v1/models)")
	alias(fs, "model", "served-model-name")
	addIdleTimeout(fs, &f.idle)
	addMaxTimeouts(fs, &f.maxTimeouts)
}

// addMaxTimeouts adds --max-timeouts, the circuit breaker of every HTTP
// command: one name, one meaning.
func addMaxTimeouts(fs *pflag.FlagSet, p *int) {
	fs.IntVar(p, "max-timeouts", serving.DefaultMaxTimeouts, "stop after this many consecutive requests to a server time out (a hung engine), leaving skipped rows for the rest (0: never)")
}

// DefaultReps is --reps wherever repetitions are counted: five samples a
// side is the fewest with which kvtier compare's rank test can reach
// p <= 0.05, so two runs with default flags can be compared.
const DefaultReps = 5

// addFull adds --full to a client command whose --sim default is a short
// grid: the flags named in grid (flag name, its default against a server)
// keep their full default with --sim only when --full is given.
func addFull(fs *pflag.FlagSet, p *bool, grid string) {
	fs.BoolVar(p, "full", false, "with --sim, the full grid ("+grid+"), the default against a server; without it --sim runs a short grid (under 2 minutes on 2 cores)")
}

// shortGrid sets *value to short when the run is --sim, --full is not
// given and the flag called name was left at its default.
func shortGrid(fs *pflag.FlagSet, sim, full bool, name string, value *string, short string) {
	if sim && !full && !fs.Changed(name) {
		*value = short
	}
}

// backendFlags are --backend, --gpu and --numa: which backend measures.
type backendFlags struct {
	name      string
	gpu, numa int
	all       bool // --gpu all (kvtier sweep: every GPU at once)
}

func (f *backendFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.name, "backend", "auto", "compute backend: auto, "+strings.Join(tiers.BackendNames(), ", ")+" (auto picks the best that opens and says why the others did not)")
	fs.Var(&gpuFlag{&f.gpu, &f.all}, "gpu", "CUDA device ordinal, or all: the host and hbm tiers on every GPU at once, with per-GPU and aggregate rows")
	f.numa = tiers.NUMAAuto
	fs.Var((*numaFlag)(&f.numa), "numa", "NUMA node for host pools: auto (the GPU's node), a node, or -1 (left to the kernel)")
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

// numaFlag is --numa: "auto" (tiers.NUMAAuto), a node, or -1.
type numaFlag int

func (n *numaFlag) String() string {
	if *n == tiers.NUMAAuto {
		return "auto"
	}
	return strconv.Itoa(int(*n))
}

func (n *numaFlag) Set(s string) error {
	if s == "auto" {
		*n = tiers.NUMAAuto
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < -1 || v > maxOrdinal {
		return fmt.Errorf("want auto, -1 or a node 0 to %d, got %q", maxOrdinal, s)
	}
	*n = numaFlag(v)
	return nil
}

func (n *numaFlag) Type() string { return "auto|node" }

func (f *backendFlags) validate() error {
	var errs []error
	if f.name != "auto" && !slices.Contains(tiers.BackendNames(), f.name) {
		errs = append(errs, option.Errorf("backend", "unknown backend %q (known: auto, %s)", f.name, strings.Join(tiers.BackendNames(), ", ")))
	}
	errs = append(errs, option.Range("gpu", f.gpu, 0, maxOrdinal), option.Range("numa", f.numa, tiers.NUMAAuto, maxOrdinal, "-1: left to the kernel"))
	return errors.Join(errs...)
}

// backendConfig returns the configuration backends open with: this
// group's device and node, the libraries from the environment
// (libraries), and log.
func (f *backendFlags) backendConfig(log io.Writer) tiers.BackendConfig {
	libs := libraries()
	return tiers.BackendConfig{GPU: f.gpu, NUMA: f.numa, Log: log, LibCUDA: libs.CUDA, LibCUBLAS: libs.CUBLAS, LibCUFile: libs.CUFile, CUBLASDirs: libs.CUBLASDirs}
}

// addFields makes a flag of each option field.
func addFields(fs *pflag.FlagSet, fields []option.Field) {
	for _, f := range fields {
		switch p := f.Ptr.(type) {
		case *string:
			fs.StringVar(p, f.Name, *p, f.Usage)
		case *int:
			fs.IntVar(p, f.Name, *p, f.Usage)
		case *int64:
			fs.Int64Var(p, f.Name, *p, f.Usage)
		case *uint64:
			fs.Uint64Var(p, f.Name, *p, f.Usage)
		case *float64:
			fs.Float64Var(p, f.Name, *p, f.Usage)
		case *bool:
			fs.BoolVar(p, f.Name, *p, f.Usage)
		case *time.Duration:
			fs.Var(durationValue{p}, f.Name, f.Usage)
		default:
			panic(fmt.Sprintf("option %s: unsupported type %T", f.Name, f.Ptr))
		}
	}
}

// alias adds old as a deprecated name of the flag name: it sets the same
// value and says, once used, to use --name. Renamed flags keep their old
// name this way for one release.
func alias(fs *pflag.FlagSet, old, name string) {
	f := fs.Lookup(name)
	fs.Var(f.Value, old, "deprecated: use --"+name)
	fs.MarkDeprecated(old, "use --"+name+" instead")
	fs.SetAnnotation(old, aliasOf, []string{name})
}

// aliasOf annotates a deprecated flag with the name of the flag it stands
// for.
const aliasOf = "kvtier-alias-of"

// checkAliases reports a deprecated flag given together with the flag it
// stands for: one would silently win over the other.
func checkAliases(fs *pflag.FlagSet) error {
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		if names := f.Annotations[aliasOf]; len(names) == 1 && fs.Changed(names[0]) {
			errs = append(errs, option.Errorf(names[0], "given with --%s, its old name: give one of them", f.Name))
		}
	})
	return errors.Join(errs...)
}

// listFlag parses the comma-separated value of the flag called name with
// parse. A value that does not parse adds an option.Error to errs and
// yields fallback, a valid placeholder, so that the options' Validate
// does not report the same flag a second time.
func listFlag[T any](errs *[]error, name, value string, parse func(string) (T, error), fallback ...T) []T {
	v, err := units.ParseList(value, parse)
	if err != nil {
		*errs = append(*errs, option.Wrap(name, err))
		return fallback
	}
	return v
}

// sizeFlag parses the size flag called name, from 1 byte to limit; a
// value that does not parse or is out of range adds an option.Error to
// errs and yields 0.
func sizeFlag(errs *[]error, name, value string, limit int64) int64 {
	n, err := units.ParseBytes(value)
	if err == nil && n > limit {
		err = fmt.Errorf("want 1 byte to %s, got %q", units.FormatBytes(limit), value)
	}
	if err != nil {
		*errs = append(*errs, option.Wrap(name, err))
		return 0
	}
	return n
}

// durationFlag parses the value of the flag called name with
// parseDuration; a value that does not parse adds an option.Error to
// errs and yields one second, a valid placeholder.
func durationFlag(errs *[]error, name, value string) time.Duration {
	d, err := parseDuration(value)
	if err != nil {
		*errs = append(*errs, option.Wrap(name, err))
		return time.Second
	}
	return d
}

// maxDuration bounds every duration flag: a week.
const maxDuration = 7 * 24 * time.Hour

// parseDuration reads a duration ("30s", "2m") or plain seconds ("30"),
// positive and at most a week.
func parseDuration(s string) (time.Duration, error) {
	var d time.Duration
	if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		if math.IsNaN(v) || v <= 0 || v > maxDuration.Seconds() {
			return 0, fmt.Errorf("want a positive duration up to %s, got %q", maxDuration, s)
		}
		d = time.Duration(v * float64(time.Second))
	} else if d, err = time.ParseDuration(strings.TrimSpace(s)); err != nil {
		return 0, fmt.Errorf("%q is not a duration (want e.g. 30s, 2m, 30)", s)
	}
	if d <= 0 || d > maxDuration {
		return 0, fmt.Errorf("want a positive duration up to %s, got %q", maxDuration, s)
	}
	return d, nil
}

// tokenFlags is --token: the run token kvtier mesh's ranks and kvtier
// serve's pools demand of every connection, and that kvtier transfer
// sends. KVTIER_TOKEN stands in for the flag (launchers pass the
// environment: srun by default, mpirun with -x KVTIER_TOKEN).
type tokenFlags struct{ token string }

// EnvToken names the environment variable of the run token.
const EnvToken = "KVTIER_TOKEN"

func (f *tokenFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.token, "token", "", "run token every connection to a pool or coordinator must carry (default $"+EnvToken+")")
}

// value is the flag, else the environment's token.
func (f *tokenFlags) value() string {
	if f.token != "" {
		return f.token
	}
	return os.Getenv(EnvToken)
}

// A durationValue is a duration flag read by parseDuration ("30s", "2m"
// or plain seconds, positive, at most a week), as every duration flag of
// kvtier is.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func (v durationValue) Type() string { return "duration" }

// A zeroDurationValue is a duration flag that also takes 0 ("0", "0s"),
// for the durations whose help gives 0 a meaning ("0: back to back").
type zeroDurationValue struct{ d *time.Duration }

func (v zeroDurationValue) String() string { return durationValue(v).String() }

func (v zeroDurationValue) Set(s string) error {
	if d, err := time.ParseDuration(strings.TrimSpace(s)); err == nil && d == 0 {
		*v.d = 0
		return nil
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && f == 0 {
		*v.d = 0
		return nil
	}
	return durationValue(v).Set(s)
}

func (v zeroDurationValue) Type() string { return "duration" }

// addIdleTimeout adds --idle-timeout, the idle timeout of a command's
// network operations, into p (default peer.DefaultIdleTimeout).
func addIdleTimeout(fs *pflag.FlagSet, p *time.Duration) {
	*p = peer.DefaultIdleTimeout
	fs.Var(durationValue{p}, "idle-timeout", peer.IdleTimeoutUsage)
}
