package sweep

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/tiers"
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
// and why: one line per reason, not one per configuration. It returns
// the number that run, the N of the progress's [i/N] (a prefix skipped
// later, over the budget or beyond free memory, is one of them).
func (s *sweeper) preflight() int {
	total, run := 0, 0
	count := map[string]int{}
	var reasons []string
	for _, dir := range s.opts.directions() {
		for _, k := range s.configs(dir) {
			c := s.newConfig(s.b, k.spec, k.layout, k.mode, dir, k.v)
			reason := s.cannotRun(c)
			c.Tier.Close()
			n := len(s.opts.Prefixes)
			total += n
			if reason == "" {
				run += n
				continue
			}
			if count[reason] == 0 {
				reasons = append(reasons, reason)
			}
			count[reason] += n
		}
	}
	on := "on " + s.b.Device()
	if !s.b.Caps().DeviceMemory {
		on = "on the host stand-in (the CPU standing in for a GPU: every figure is labelled so)"
	}
	line := fmt.Sprintf("%d configurations (tier × layout × copy × prefix): %d run %s", total, run, on)
	if len(reasons) > 0 {
		line += fmt.Sprintf("; %d skipped, by reason:", total-run)
	}
	say := []string{line}
	for _, r := range reasons {
		say = append(say, fmt.Sprintf("  %d skipped: %s", count[r], strings.TrimSpace(r)))
	}
	for _, l := range say {
		harness.Note(s.log, "kvtier "+Suite.Name+": "+l)
	}
	return run
}
