package replayer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/serving/servingflag"
	"github.com/kvtier/kvtier/workload"
)

// WorkloadFlags are the flags kvtier replay and kvtier knee share: the
// workload (a trace or synthetic sessions) and how it is sent.
type WorkloadFlags struct {
	Model             cli.ModelFlags
	served            string
	tracePath         string
	read              workload.Options
	numPrompts        int
	gen               workload.GenFlags
	dispatch          string
	speedup           float64
	concurrency       int
	duration, timeout time.Duration
	sloTTFT, sloTPOT  time.Duration
	maxOutput         string
	Seed              uint64
	idle              time.Duration
	api               string
	maxTimeouts       int
}

// genNames are the generator's flags, which only apply without --trace
// (--think applies to both).
var genNames = []string{"sessions", "turns", "shared-prompts", "system-prompt", "turn-tokens", "output-tokens", "arrival-window", "fixed-sessions"}

// Add adds the flags to fs.
func (f *WorkloadFlags) Add(fs *pflag.FlagSet) {
	f.Model.AddModel(fs)
	fs.StringVar(&f.served, "served-model-name", "", "served model name (default: the first of GET /v1/models)")
	fs.StringVar(&f.tracePath, "trace", "", "trace to replay (Mooncake or Alibaba JSON lines, gzip or not); default: synthetic sessions (the generator flags)")
	fs.IntVar(&f.read.BlockTokens, "trace-block", 0, "tokens per hash id (0: the format's: 512 Mooncake, 16 Alibaba; 16 for synthetic sessions); a multiple of the server's block")
	fs.IntVar(&f.read.Reorder, "reorder", workload.DefaultReorder, "requests held to put the trace's lines into timestamp order")
	fs.IntVar(&f.numPrompts, "num-prompts", 0, "send only the first N requests in timestamp order (0: all)")
	cli.Alias(fs, "max-requests", "num-prompts")
	f.gen.Add(fs, DefaultSessions(), "without --trace: ")
	fs.Lookup("think").Usage = "think time between a session's turns: of synthetic sessions the mean (exponential; 0: back to back); with --trace, of a turn the trace gives no gap to its parent for"
	fs.StringVar(&f.dispatch, "dispatch", "", "when requests are sent: timestamp (trace times / --speedup, open loop) or session (closed loop: a turn after the previous answer and its think time); default timestamp with --trace, session without")
	fs.Float64Var(&f.speedup, "speedup", 1, "divide the trace's times and think times by this")
	fs.IntVar(&f.concurrency, "max-concurrency", 0, "timestamp: most requests in flight; session: sessions at once (0: no limit, every session)")
	cli.Alias(fs, "concurrency", "max-concurrency")
	f.timeout = 300 * time.Second
	fs.Var(cli.ZeroDurationValue{D: &f.duration}, "duration", "send no request after this long (0: the whole workload)")
	fs.Var(cli.DurationValue{D: &f.timeout}, "timeout", "limit of one request; one that runs past it is counted as timed out")
	fs.Var(cli.ZeroDurationValue{D: &f.sloTTFT}, "slo-ttft", "TTFT objective of goodput (e.g. 2s; 0: none)")
	fs.Var(cli.ZeroDurationValue{D: &f.sloTPOT}, "slo-tpot", "TPOT objective of goodput (e.g. 50ms; 0: none)")
	fs.StringVar(&f.maxOutput, "max-output", "0", "cap on max_tokens (k = 1024; 0: the trace's output_length)")
	fs.Uint64Var(&f.Seed, "seed", 1, "seed of the prompts' token ids and of synthetic sessions")
	cli.AddIdleTimeout(fs, &f.idle)
	servingflag.AddMaxTimeouts(fs, &f.maxTimeouts)
	fs.StringVar(&f.api, "api", serving.APICompletions, "API of the requests: completions (prompts of token ids, or text to a server that takes none) or chat (one user message of the same length)")
}

// Config returns the replay configuration (without endpoint) and the
// workload, adding every problem to errs. The workload is nil when the
// flags are bad.
func (f *WorkloadFlags) Config(ctx context.Context, fs *pflag.FlagSet, errs *[]error) (Config, *Workload) {
	cfg := Config{Model: f.served, API: f.api, Speedup: f.speedup, Concurrency: f.concurrency, Seed: f.Seed, Think: f.gen.Gen.Think, Idle: f.idle, MaxTimeouts: f.maxTimeouts,
		Timeout: f.timeout, Duration: f.duration, SLOTTFT: f.sloTTFT, SLOTPOT: f.sloTPOT}
	cfg.Dispatch = Dispatch(cmp.Or(f.dispatch, map[bool]string{true: "timestamp", false: "session"}[f.tracePath != ""]))
	cfg.MaxOutput = cli.TokenCount(errs, "max-output", f.maxOutput, 0)
	*errs = append(*errs, option.Range("num-prompts", f.numPrompts, 0, 1<<30, "0: all"))
	if err := f.read.Validate(); err != nil {
		*errs = append(*errs, err)
	}
	if f.tracePath == "" {
		o := f.gen.Options(errs, f.Seed, cmp.Or(f.read.BlockTokens, DefaultSessions().BlockTokens))
		if errors.Join(*errs...) != nil { // nil entries are no problems
			return cfg, nil
		}
		w, err := Generate(ctx, o, f.numPrompts)
		*errs = append(*errs, workloadErr(err, ""))
		return cfg, w
	}
	for _, n := range genNames {
		if fs.Changed(n) {
			*errs = append(*errs, option.Errorf(n, "shapes synthetic sessions: drop it with --trace"))
		}
	}
	if errors.Join(*errs...) != nil { // nil entries are no problems
		return cfg, nil
	}
	w, err := LoadTrace(ctx, f.tracePath, f.read, f.numPrompts)
	*errs = append(*errs, workloadErr(err, "trace"))
	return cfg, w
}

// workloadErr names the flag a workload's error is about: --num-prompts
// for a workload too large to hold (fewer requests make it fit), else
// field ("": err names its own).
func workloadErr(err error, field string) error {
	switch {
	case errors.Is(err, ErrTooLarge):
		return option.Wrap("num-prompts", err)
	case err == nil || field == "":
		return err
	}
	return option.Wrap(field, err)
}

// Settings are the workload's settings for manifest.json.
func (f *WorkloadFlags) Settings(cfg Config, w *Workload) map[string]string {
	s := map[string]string{
		"trace": w.Name, "dispatch": string(cfg.Dispatch), "speedup": strconv.FormatFloat(cfg.Speedup, 'g', -1, 64),
		"concurrency": strconv.Itoa(cfg.Concurrency), "duration": cfg.Duration.String(), "think": cfg.Think.String(),
		"max_output": strconv.Itoa(cfg.MaxOutput), "timeout": cfg.Timeout.String(), "idle_timeout": cfg.Idle.String(), "seed": strconv.FormatUint(cfg.Seed, 10),
		"slo_ttft": cfg.SLOTTFT.String(), "slo_tpot": cfg.SLOTPOT.String(), "requests": strconv.Itoa(len(w.Requests)),
		"block_tokens": strconv.Itoa(w.BlockTokens), "api": cmp.Or(cfg.API, serving.APICompletions), "prediction": "LRU model, blocks touched tail first (kvtier trace --touch reverse)",
	}
	if g := w.Generated; g != nil {
		shape := "mean"
		if g.Fixed {
			shape = "fixed"
		}
		sys := fmt.Sprintf("a %d-token system prompt of its own", g.SystemTokens)
		if g.SystemPrompts > 0 {
			sys = fmt.Sprintf("one of %d shared %d-token system prompts", g.SystemPrompts, g.SystemTokens)
		}
		s["generated"] = fmt.Sprintf("%d sessions of %d turns (%s) each with %s, %d new and %d output tokens a turn, think %s, arrivals over %s, %d-token blocks, seed %d",
			g.Sessions, g.Turns, shape, sys, g.TurnTokens, g.OutputTokens, g.Think, g.Duration, g.BlockTokens, g.Seed)
	}
	return s
}

// BlockBytes returns the KV bytes of a block of the served model: of the
// geometry --model or --model-config give, else of the preset the served
// model's name matches (0 when none does).
func (f *WorkloadFlags) BlockBytes(errs *[]error) func(model string, blockSize int) int64 {
	if f.Model.Model == "" && f.Model.Config == "" {
		if f.Model.TP != 1 || f.Model.KVDType != "" {
			*errs = append(*errs, option.Errorf("tp", "--tp and --kv-dtype need the model's geometry: give --model or --model-config"))
			return nil
		}
		return kv.ServedBlockBytes
	}
	g, err := f.Model.Geometry()
	if err != nil {
		*errs = append(*errs, err)
		return nil
	}
	return func(_ string, bs int) int64 { return g.BytesPerToken() * int64(bs) }
}
