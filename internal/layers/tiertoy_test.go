package layers

import (
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/harness/trace"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/workload"
)

// toy is a tier this test adds: a capacity tier after remote that the
// HTTP probe calls toyhit.
var toy = tierspec.Register(tierspec.Desc{
	Name: "toy", Order: 5, Kind: tierspec.Fetch, Probe: "toyhit", ProbeLabel: "toy hit",
	Plan: &tierspec.Plan{Name: "toyplan", Label: "TOY", Share: "toy %", Order: 4, Capacities: "0", Usage: "toy KV capacities"},
})

// toyCosts prices every tier alike.
type toyCosts struct{}

func (toyCosts) Has(string) bool                                   { return true }
func (toyCosts) Predict(analysis.Served, int64) (float64, float64) { return 0.001, 0.01 }
func (toyCosts) Extrapolated(analysis.Served, int64) bool          { return false }
func (toyCosts) PastLimit(analysis.Served, int64) bool             { return false }
func (toyCosts) Store(string) (float64, float64, bool)             { return 0, 0, false }
func (toyCosts) Source() string                                    { return "simulated" }

// A tier registered in one file shows up in the capacity plan (served
// tokens, columns) and in the report's plan and probe tables, with no
// edit in the planner or the report.
func TestToyTierInPlanAndReport(t *testing.T) {
	t.Parallel()
	const B = 100
	p, err := trace.NewPlanner(trace.PlanOptions{
		Configs: []trace.Config{{"hbm": 2 * B, toy.Plan.Name: 10 * B}}, BlockBytes: B, Costs: toyCosts{},
	})
	if err != nil {
		t.Fatal(err)
	}
	inf := int64(workload.Inf)
	p.Observe(&workload.Request{Time: 0}, &workload.Hits{Dist: []int64{inf, inf, inf}, Lead: []int64{inf, inf, inf}, Tokens: []int{16, 16, 16}, Input: 48})
	p.Observe(&workload.Request{Time: 1}, &workload.Hits{Dist: []int64{5, 5, 5}, Lead: []int64{5, 5, 5}, Tokens: []int{16, 16, 16}, Input: 48})
	plan := p.Results()
	if got := plan[0].Tokens[toy.Plan.Name]; got != 48 {
		t.Fatalf("the toy tier served %d tokens, want 48 (a distance past hbm's 2 blocks, within the toy's 10)", got)
	}
	res := &trace.Result{Path: "toy.jsonl", Read: workload.ReadStats{BlockTokens: 16}, Analysis: &workload.Analysis{Touch: workload.TouchForward}}
	rows := trace.PlanRows(res, plan, "costs")
	if rows[0].Get("frac_toyplan") != "0.5" || rows[0].Get("toyplan_bytes") != "1000" {
		t.Errorf("plan row: frac_toyplan %q, toyplan_bytes %q", rows[0].Get("frac_toyplan"), rows[0].Get("toyplan_bytes"))
	}
	pr := results.NewRow(probe.Suite.Name)
	pr.Tier, pr.PrefixTokens, pr.Status, pr.Backend, pr.Transport = toy.Probe, 1024, results.StatusOK, "http", "http"
	pr.Set("ttft_s", 0.25)
	pr.Set("verified", "true")
	run := &analysis.Run{Dir: "toy", Files: map[string][]results.Row{trace.PlanFile: rows, probe.Suite.Main().Name: {pr}}}
	var b strings.Builder
	report.Write(&b, []*analysis.Run{run})
	for _, want := range []string{"| TOY |", "| toy % |", "| toyhit |", "toyhit/miss"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report has no %q:\n%s", want, b.String())
		}
	}
}
