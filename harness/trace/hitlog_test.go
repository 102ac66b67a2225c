package trace

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvtier/kvtier/workload"
)

// TestHitLogReplays: a plan's second look at the requests (from the
// distances kept) gives the planner what the analysis gave it: times,
// inputs, distances (never seen, far, near), running leads and tokens,
// also once a block's tokens outgrow 16 bits.
func TestHitLogReplays(t *testing.T) {
	t.Parallel()
	type rec struct {
		r workload.Request
		h workload.Hits
	}
	recs := []rec{
		{workload.Request{Time: 1, Input: 1000}, workload.Hits{Dist: []int64{workload.Inf, 3}, Tokens: []int{512, 488}, Input: 1000}},
		{workload.Request{Time: 2.5, Input: 20}, workload.Hits{Dist: []int64{0}, Tokens: []int{20}, Input: 20}},
		{workload.Request{Time: 3, Input: 7}, workload.Hits{Input: 7}},
		{workload.Request{Time: 4, Input: 70000}, workload.Hits{Dist: []int64{farDist + 5, 2}, Tokens: []int{69000, 1000}, Input: 70000}},
	}
	var l hitLog
	for i := range recs {
		l.add(&recs[i].r, &recs[i].h)
	}
	var got []rec
	l.replay(func(r *workload.Request, h *workload.Hits) {
		got = append(got, rec{*r, workload.Hits{Dist: slices.Clone(h.Dist), Lead: slices.Clone(h.Lead), Tokens: slices.Clone(h.Tokens), Input: h.Input}})
	})
	if len(got) != len(recs) {
		t.Fatalf("replayed %d requests, want %d", len(got), len(recs))
	}
	wantDist := [][]int64{{workload.Inf, 3}, {0}, nil, {farDist, 2}}
	wantLead := [][]int64{{workload.Inf, workload.Inf}, {0}, nil, {farDist, farDist}}
	for i, g := range got {
		w := recs[i]
		if g.r.Time != w.r.Time || g.r.Input != w.r.Input || g.h.Input != w.h.Input {
			t.Errorf("request %d: time %g input %d/%d, want %g %d", i, g.r.Time, g.r.Input, g.h.Input, w.r.Time, w.r.Input)
		}
		if !slices.Equal(g.h.Dist, wantDist[i]) || !slices.Equal(g.h.Lead, wantLead[i]) || !slices.Equal(g.h.Tokens, w.h.Tokens) {
			t.Errorf("request %d: dist %v lead %v tokens %v, want %v %v %v", i, g.h.Dist, g.h.Lead, g.h.Tokens, wantDist[i], wantLead[i], w.h.Tokens)
		}
	}
	var first int
	l.replayFirst(2, func(*workload.Request, *workload.Hits) { first++ })
	if first != 2 {
		t.Errorf("replayFirst(2) observed %d requests", first)
	}
}

// TestPlanLogShards: planning the configurations in several Planners at
// once gives what one Planner gives, in the configurations' order, with
// their roles, and the rounding notes of the whole grid.
func TestPlanLogShards(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 9))
	var l hitLog
	for i := range 3000 {
		n := 1 + rng.IntN(12)
		h := workload.Hits{Input: 16*n - rng.IntN(16)}
		for k := range n {
			d := int64(rng.IntN(400))
			if rng.IntN(5) == 0 {
				d = workload.Inf
			}
			h.Dist = append(h.Dist, d)
			h.Tokens = append(h.Tokens, min(16, h.Input-16*k))
		}
		l.add(&workload.Request{Time: float64(i), Input: h.Input}, &h)
	}
	const B = 100
	var cs []Config
	for _, hbm := range []int64{0, 10*B + 7, 50 * B, 200 * B} {
		for _, dram := range []int64{0, 100 * B, 300*B + 1} {
			cs = append(cs, Config{"hbm": hbm, "dram": dram})
		}
	}
	roles := []Role{{Kind: RoleKnee, Knee: 0.9, Tier: "hbm"}, {}, {Kind: RoleWithout, Tier: "dram"}}
	o := PlanOptions{Configs: cs, Roles: roles, BlockBytes: B, Costs: fakeCosts{PlanTiers}}
	want, wantNotes, err := planLog(o, &l, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(cs) || want[0].Role != roles[0] || want[2].Role != roles[2] || want[5].Role != (Role{}) {
		t.Fatalf("one planner: %d results, roles %v %v %v", len(want), want[0].Role, want[2].Role, want[5].Role)
	}
	for _, shards := range []int{2, 5, len(cs), 3 * len(cs)} {
		got, notes, err := planLog(o, &l, shards)
		if err != nil {
			t.Fatal(err)
		}
		// Printed, as NaN (no utilisation without a store cost) is unequal to itself.
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) || !slices.Equal(notes, wantNotes) {
			t.Errorf("%d planners: results or notes differ from one planner's", shards)
		}
	}
}
