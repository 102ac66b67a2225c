package trace

import (
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
