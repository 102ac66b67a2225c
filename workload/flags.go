package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/units"
)

// GenFlags are the synthetic-session flags: kvtier trace --generate
// writes such sessions, kvtier replay and kvtier knee send them. The
// names mean the same in each; the defaults differ.
type GenFlags struct {
	Gen GenOptions // the flags' values, but for the token counts
	// Token counts, as text: 2k is 2048.
	systemPrompt, turnTokens, outputTokens string
}

// Add adds the flags with the defaults of d, each usage after prefix.
func (f *GenFlags) Add(fs *pflag.FlagSet, d GenOptions, prefix string) {
	g := &f.Gen
	*g = d
	fs.IntVar(&g.Sessions, "sessions", g.Sessions, prefix+"sessions")
	fs.IntVar(&g.Turns, "turns", g.Turns, prefix+"mean turns per session (uniform from 1 to 2·turns−1; exactly this with --fixed-sessions)")
	fs.IntVar(&g.SystemPrompts, "shared-prompts", g.SystemPrompts, prefix+"distinct system prompts the sessions share")
	fs.StringVar(&f.systemPrompt, "system-prompt", strconv.Itoa(g.SystemTokens), prefix+"tokens of each system prompt (k = 1024; 0: none)")
	fs.StringVar(&f.turnTokens, "turn-tokens", strconv.Itoa(g.TurnTokens), prefix+"mean new user tokens per turn")
	fs.StringVar(&f.outputTokens, "output-tokens", strconv.Itoa(g.OutputTokens), prefix+"mean output tokens per turn (0: none)")
	fs.Var(cli.ZeroDurationValue{D: &g.Think}, "think", prefix+"mean think time between a session's turns (exponential; 0: back to back)")
	fs.Var(cli.ZeroDurationValue{D: &g.Duration}, "arrival-window", prefix+"sessions start uniformly within this window (0: all at once)")
	fs.BoolVar(&g.Fixed, "fixed-sessions", g.Fixed, prefix+"every session exactly --turns turns of exactly --turn-tokens new and --output-tokens output tokens (default: uniform from half to one and a half times each)")
}

// Options returns the generator's options with seed and block size,
// adding every problem to errs.
func (f *GenFlags) Options(errs *[]error, seed uint64, blockTokens int) GenOptions {
	o := f.Gen
	o.Seed = seed
	if blockTokens > 0 {
		o.BlockTokens = blockTokens
	}
	o.SystemTokens = cli.TokenCount(errs, "system-prompt", f.systemPrompt, o.SystemTokens)
	o.TurnTokens = cli.TokenCount(errs, "turn-tokens", f.turnTokens, o.TurnTokens)
	o.OutputTokens = cli.TokenCount(errs, "output-tokens", f.outputTokens, o.OutputTokens)
	if err := o.Validate(); err != nil {
		*errs = append(*errs, err)
	}
	return o
}

// Unbounded is the capacity of a tier without a limit ("inf").
const Unbounded = int64(math.MaxInt64)

// maxCapacity bounds a cache capacity that is not "inf": 1 PiB.
const maxCapacity = 1 << 50

// ParseCapacity reads a cache or tier capacity in bytes: "0", "inf", or a size up to
// 1 PiB.
func ParseCapacity(s string) (int64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "0":
		return 0, nil
	case "inf", "unbounded":
		return Unbounded, nil
	}
	n, err := units.ParseBytes(s)
	if err == nil && n > maxCapacity {
		return 0, fmt.Errorf("%q: at most %s (or inf)", s, units.FormatBytes(int64(maxCapacity)))
	}
	return n, err
}
