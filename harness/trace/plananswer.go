package trace

import (
	"maps"
	"slices"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/workload"
)

// Columns of plan.csv that say why a configuration is evaluated.
const (
	ColRole      = "role"
	ColKnee      = "knee"
	ColSizedTier = "sized_tier"
)

// Kinds of Role: why a plan evaluates a configuration.
const (
	RoleGrid    = "grid"    // one of the capacity flags' combinations
	RoleKnee    = "knee"    // the capacity of a tier reaching a share of the APC ceiling
	RoleWithout = "without" // a knee's configuration without the tier it sized
)

// A Role says why the plan evaluates a configuration: the user's grid
// (the zero Role), or its answer to the capacity question: a knee, the
// capacity of Tier (with the tiers before it as configured) reaching
// Knee of the APC ceiling, and the same configuration without Tier.
type Role struct {
	Kind string
	Knee float64 // RoleKnee: the share of the ceiling
	Tier string  // RoleKnee: the tier sized; RoleWithout: the tier left out
}

// kind is r's kind, RoleGrid for the zero Role.
func (r Role) kind() string {
	if r.Kind == "" {
		return RoleGrid
	}
	return r.Kind
}

// AnswerConfigs are the configurations that answer the capacity
// question for a trace whose one-cache LRU knees are knees (in blocks,
// by share of the ceiling), blockBytes each: for the first capacity
// tier alone, its capacity at each knee and no cache at all; for the
// second, at each capacity of the first in firsts (bytes), the second's
// capacity reaching each knee, and the first alone. Exclusive tiers add
// up (the second holds the knee less the first); an inclusive second
// tier must hold the knee itself. A knee the first tier reaches alone
// needs none of the second.
func AnswerConfigs(knees map[float64]int64, blockBytes int64, firsts []int64, inclusive bool) ([]Config, []Role) {
	first, second := CapacityTiers[0], CapacityTiers[1]
	var cs []Config
	var rs []Role
	add := func(c Config, r Role) {
		cs, rs = append(cs, c), append(rs, r)
	}
	add(Config{}, Role{Kind: RoleWithout, Tier: first})
	for _, f := range slices.Sorted(maps.Keys(knees)) {
		add(Config{first: knees[f] * blockBytes}, Role{Kind: RoleKnee, Knee: f, Tier: first})
	}
	for _, h := range sortedUnique(append([]int64(nil), firsts...)) {
		if h <= 0 || h == workload.Unbounded {
			continue
		}
		hb := h / blockBytes
		add(Config{first: h}, Role{Kind: RoleWithout, Tier: second})
		for _, f := range slices.Sorted(maps.Keys(knees)) {
			d := max(knees[f]-hb, 0)
			if inclusive && knees[f] <= hb {
				d = 0
			} else if inclusive {
				d = knees[f]
			}
			add(Config{first: h, second: d * blockBytes}, Role{Kind: RoleKnee, Knee: f, Tier: second})
		}
	}
	return cs, rs
}

// configColumns lead plan.csv and plan_check.csv: the trace, why the
// configuration is evaluated, and its capacities.
var configColumns = append([]results.Column{traceName,
	results.Text(ColRole, "why the configuration is evaluated: grid (the capacity flags), knee (a tier's capacity reaching a share of the APC ceiling), without (a knee's configuration without that tier)"),
	results.Float(ColKnee, "fraction", "knee: the share of the APC ceiling (LRU model, predicted)"),
	results.Text(ColSizedTier, "knee: the tier sized; without: the tier left out"),
}, perTier(CapacityTiers, "%s_bytes", func(t string) results.Column {
	return results.Column{Type: results.TypeString, Unit: "B", Doc: t + "'s capacity in bytes; inf: no limit, 0: none"}
})...)

// setConfig sets the configColumns of a row of p, a configuration of
// res's plan.
func setConfig(r *results.Row, res *Result, p PlanResult) {
	r.Set(results.ColTrace, res.Name())
	r.Set(ColRole, p.Role.kind())
	if p.Role.Kind == RoleKnee {
		r.Set(ColKnee, p.Role.Knee)
	}
	r.Set(ColSizedTier, p.Role.Tier)
	for _, t := range p.Tiers[:len(p.Tiers)-1] {
		r.Set(t+"_bytes", FormatCapacityBytes(p.Config[t]))
	}
}
