package sweep

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// cannotRun is why configuration c cannot run on this backend at all,
// known before anything is set up ("" when it can): a direction the tier
// lacks, the tier unavailable here, a copy mode the backend lacks.
func (s *sweeper) cannotRun(c Config) string {
	if !c.Spec.Has(c.Direction) {
		return c.Spec.NoDirectionReason(c.Direction)
	}
	if reason := c.Tier.Available(); reason != "" {
		return reason
	}
	if c.Spec.Moves() && !slices.Contains(s.b.CopyModes(), c.Copy) {
		return tiers.UnsupportedModeReason(c.Copy)
	}
	return ""
}

// preflight says, before anything runs, how many configurations (a
// tier, layout, copy mode and prefix) the sweep has, how many run and on
// what (a GPU, or the CPU standing in for one), and how many are skipped
// and why: one line per reason, not one per configuration (a prefix over
// a fixed limit of the tier's options, --disk-max, is skipped here by
// the same test the run makes). It returns the estimated seconds of each
// that runs, in the order they run: the progress's [i/N] counts them (a
// prefix skipped later, over the budget by the estimate calibrated as it
// runs or beyond free memory or disk, is one of them, and a line says
// how many the estimate before calibration puts over the budget) and its
// ETA weighs them.
func (s *sweeper) preflight() []float64 {
	total := 0
	var skips skipTally
	var weights []float64
	var over likelySkips
	once := map[string]bool{}
	for _, dir := range s.opts.directions() {
		for _, k := range s.configs(dir) {
			c := s.newConfig(s.b, k.spec, k.layout, k.mode, dir, k.v)
			total += len(s.opts.Prefixes)
			if reason := s.cannotRun(c); reason != "" {
				skips.add(reason, len(s.opts.Prefixes))
			} else {
				w, est := s.weights(c, once)
				for i, tok := range s.opts.Prefixes {
					if reason := limitReason(c, tok); reason != "" {
						skips.limit(c.Spec.Name, tok, reason)
					} else {
						weights = append(weights, w[i])
						over.add(c.Spec.Name, est[i], s.opts.Policy.Budget)
					}
				}
			}
			c.Tier.Close()
		}
	}
	on := "on " + s.b.Device()
	if !s.b.Caps().DeviceMemory {
		on = "on the host stand-in (the CPU standing in for a GPU: every figure is labelled so)"
	}
	line := fmt.Sprintf("%d configurations (tier × layout × copy × prefix): %d run %s", total, len(weights), on)
	if len(skips.keys) > 0 {
		line += fmt.Sprintf("; %d skipped, by reason:", total-len(weights))
	}
	say := append([]string{line}, skips.lines()...)
	if l := over.line(len(weights), s.opts.Policy.Budget); l != "" {
		say = append(say, l)
	}
	for _, l := range say {
		harness.Note(s.log, "kvtier "+Suite.Name+": "+l)
	}
	return weights
}

// A skipTally counts the configurations preflight skips by reason, in
// the order the reasons first come. A tier's prefixes over its limit
// (--disk-max) are one reason however many prefixes it stops: the
// shortest one's, which says the limit, with the prefixes listed.
type skipTally struct {
	keys   []string
	count  map[string]int
	limits map[string]*limitSkip
}

// limitSkip is one tier's prefixes over its limit: the shortest
// prefix's reason and every prefix stopped.
type limitSkip struct {
	shortest int
	reason   string
	prefixes []int
}

// add counts n configurations skipped for reason (a key too).
func (t *skipTally) add(reason string, n int) {
	if t.count == nil {
		t.count, t.limits = map[string]int{}, map[string]*limitSkip{}
	}
	if t.count[reason] == 0 {
		t.keys = append(t.keys, reason)
	}
	t.count[reason] += n
}

// limit counts tier's prefix tok, skipped over the tier's limit for
// reason.
func (t *skipTally) limit(tier string, tok int, reason string) {
	key := "\x00limit " + tier
	t.add(key, 1)
	l := t.limits[key]
	if l == nil {
		l = &limitSkip{shortest: tok, reason: reason}
		t.limits[key] = l
	}
	if tok < l.shortest {
		l.shortest, l.reason = tok, reason
	}
	if !slices.Contains(l.prefixes, tok) {
		l.prefixes = append(l.prefixes, tok)
	}
}

// lines are preflight's lines, one per reason with its count.
func (t *skipTally) lines() []string {
	var out []string
	for _, k := range t.keys {
		reason := strings.TrimSpace(k)
		if l := t.limits[k]; l != nil {
			slices.Sort(l.prefixes)
			toks := make([]string, len(l.prefixes))
			for i, tok := range l.prefixes {
				toks[i] = units.FormatTokens(tok)
			}
			reason = l.reason
			if len(toks) > 1 {
				reason += fmt.Sprintf(" (prefixes %s: the longer take more)", strings.Join(toks, ", "))
			}
		}
		out = append(out, fmt.Sprintf("  %d skipped: %s", t.count[k], reason))
	}
	return out
}

// configSeconds is the rough time of what every measured configuration
// does besides its samples: the tier built, rows and summary written.
const configSeconds = 0.2

// weights are the estimated seconds of configuration c at each prefix
// (tiers.Estimate), as the sweep runs them: the first prefix also sets
// the tier up for the largest (and, for a tier whose set-up the run
// shares, once, writes what it shares: once records the tiers that
// did) and calibrates its estimator; each takes the samples the policy
// gives its estimated fetch, and none where that is over the budget
// and the prefix is skipped.
//
// It returns, beside the weights, each prefix's estimated fetch before
// calibration (0 where the tier gives no estimate), so that preflight
// can say which runs the budget will likely skip.
func (s *sweeper) weights(c Config, once map[string]bool) (out, fetch []float64) {
	n := len(s.opts.Prefixes)
	e, ok := c.Tier.(tiers.Estimator)
	if !ok {
		return make([]float64, n), make([]float64, n) // unweighed: the ETA counts configurations
	}
	// The pools are sized for the longest prefix the tier will run: one
	// its limit (--disk-max) skips sets up nothing.
	longest := s.opts.Prefixes[0]
	for _, tok := range s.opts.Prefixes {
		if limitReason(c, tok) == "" {
			longest = max(longest, tok)
		}
	}
	maxBlocks := c.Geom.Blocks(longest)
	for i, tok := range s.opts.Prefixes {
		p := Prefix(c.Geom, tok)
		est := e.Estimate(p.Blocks, maxBlocks)
		fetch = append(fetch, est.Fetch)
		w := 0.0
		if i == 0 {
			w = est.Setup + s.calibration(c, p, est.Fetch)
			if !once[c.Spec.Name] {
				w, once[c.Spec.Name] = w+est.Once, true
			}
		}
		if !overBudget(est.Fetch, s.opts.Policy.Budget) {
			w += est.Fetch*float64(s.opts.Policy.Samples(est.Fetch)) + 2*est.Check + configSeconds
		}
		out = append(out, w)
	}
	return out, fetch
}

// likelySkips counts the configurations preflight counts as run whose
// fetch, estimated before the run calibrates it, is over the budget:
// the run decides on its calibrated estimate, so these are likely, not
// certain, skips.
type likelySkips struct {
	n     int
	tiers []string
	most  float64
}

// add counts tier's configuration if its estimated fetch (seconds) is
// over budget.
func (o *likelySkips) add(tier string, fetch float64, budget time.Duration) {
	if !overBudget(fetch, budget) {
		return
	}
	o.n++
	o.most = max(o.most, fetch)
	if !slices.Contains(o.tiers, tier) {
		o.tiers = append(o.tiers, tier)
	}
}

// line is preflight's line for the likely skips ("" when none).
func (o *likelySkips) line(run int, budget time.Duration) string {
	if o.n == 0 {
		return ""
	}
	return fmt.Sprintf("  of the %d that run, %d likely skipped: estimated over the budget of %s per rep before calibration (%s, up to %s; the run decides on its calibrated estimate)",
		run, o.n, budget, strings.Join(o.tiers, ", "), units.FormatSeconds(o.most))
}

// calibration is the estimated time of calibrate's samples before the
// first prefix p, whose fetch takes fetch seconds: one block's copy, or
// two GEMMs at the rate the estimate implies.
func (s *sweeper) calibration(c Config, p tiers.Prefix, fetch float64) float64 {
	if c.Spec.Moves() {
		return fetch / float64(max(p.Blocks, 1))
	}
	op := kv.GEMM{M: 512, N: c.Geom.Hidden, K: c.Geom.Hidden, Batch: 1}
	if w := work(c, p); w > 0 {
		return 2 * op.FLOPs() * fetch / w
	}
	return 0
}
