package main

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/serving"
)

// The flags of the HTTP commands that have not moved into their suite's
// package yet; the shared groups are package cli's.

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
	m := cli.ModelFlags{Model: f.model, Config: f.config, KVDType: f.kvDType, BlockSize: f.blockSize, TP: f.tp}
	return m.Geometry()
}

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
	cli.Alias(fs, "model", "served-model-name")
	cli.AddIdleTimeout(fs, &f.idle)
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
