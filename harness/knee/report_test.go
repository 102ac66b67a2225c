package knee

// The knee's report section is tested here, where the knee suite is
// registered: report's own tests render a full report of the suites
// they register, which this one would join.

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
)

// kneeRow is a knee.csv row of a capacity: blocks, realized APC and TTFT
// p90 (NaN apc: an error row).
func kneeRow(blocks int, apc, p90 float64) results.Row {
	r := results.NewRow("knee")
	r.Status = results.StatusOK
	r.Set("gpu_blocks", blocks)
	r.Set("capacity_tokens", 16*blocks)
	r.Set("capacity_bytes", int64(16*blocks)*98304)
	r.Set("working_set_tokens", 16*300)
	r.Set("working_set_bytes", int64(16*300)*98304)
	r.Set("requests", 10)
	r.Set("ok", 10)
	r.Set("apc", apc)
	r.Set("ttft_p90_s", p90)
	r.Set("ttft_p50_s", p90/2)
	if math.IsNaN(apc) {
		r.Fail(errLike("server of 50 blocks did not start: exit status 3"))
		r.Extra = map[string]string{"gpu_blocks": "50", "capacity_tokens": "800", "capacity_bytes": "78643200"}
	}
	return r
}

type errLike string

func (e errLike) Error() string { return string(e) }

func TestShapeOfKnee(t *testing.T) {
	rows := []results.Row{kneeRow(600, 0.75, 0.7), kneeRow(100, 0.07, 13), kneeRow(300, 0.74, 0.6), kneeRow(200, 0.36, 4.6), kneeRow(900, 0.75, 0.65)}
	k, err := ShapeOfKnee(rows)
	if err != nil {
		t.Fatal(err)
	}
	if k.Knee != 2 || k.WorkingSet != 2 || math.Abs(k.APCGain-0.75/0.07) > 1e-9 || math.Abs(k.TTFTFall-13/0.6) > 1e-9 || math.Abs(k.Flat-0.1/0.6) > 1e-9 {
		t.Errorf("shape %+v", k)
	}
	if _, err := ShapeOfKnee(append(rows, kneeRow(50, math.NaN(), math.NaN()))); err == nil {
		t.Error("an error row must leave no shape")
	}
}

func TestWriteKnee(t *testing.T) {
	lagged := kneeRow(300, 0.74, 0.6)
	lagged.Set("sim_lag_s", 0.042)
	run := &analysis.Run{Files: map[string][]results.Row{File: {kneeRow(200, 0.36, 4.6), kneeRow(50, math.NaN(), math.NaN()), lagged}}}
	var b bytes.Buffer
	writeKnee(&b, run)
	mustContain(t, b.String(),
		"| GPU KV (GB) | realized APC | TTFT p90 |",
		"| 0.1 | — [1] | — | 50 |",
		"[1] server of 50 blocks did not start: exit status 3",
		"| 0.3 | 36.0 % | 4.60 s | 200 |",
		"Working set: 0.5 GB (4,800 tokens)",
		"No knee: capacity of 50 blocks (error: server of 50 blocks did not start: exit status 3) has no realized APC or no TTFT p90.",
		"The simulator fell up to 42.0 ms behind real time (kvtier_sim_lag_seconds, at 300 GPU blocks)",
	)
}

// mustContain reports each of wants that out lacks.
func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

// TestKneeHeadline: the report's headline says where the knee is, with
// the TTFT there and the working set, labelled and linking to the
// knee's section.
func TestKneeHeadline(t *testing.T) {
	rows := []results.Row{kneeRow(100, 0.07, 13), kneeRow(200, 0.36, 4.6), kneeRow(300, 0.80, 0.53), kneeRow(800, 0.73, 0.65)}
	for i := range rows {
		rows[i].Set("simulated", true)
	}
	run := &analysis.Run{Dir: "knee", Files: map[string][]results.Row{File: rows}}
	var b bytes.Buffer
	report.Markdown(&b, []*analysis.Run{run}, report.Options{})
	head, _, _ := strings.Cut(b.String(), "\n## Environment")
	want := "- **" + Suite.Title + "** (simulated; [details](#capacity-knee-realized-apc-and-ttft-against-gpu-kv-capacity)): " +
		"the realized APC reaches 95 % of its largest (73.0 %) at 0.5 GB of GPU KV, TTFT p90 530 ms there, 24.5× below the smallest capacity's; working set 0.5 GB (predicted)."
	if !strings.Contains(head, want) {
		t.Errorf("headline lacks\n%s\n%s", want, head)
	}
}

// A capacity in which kvtier sim fell behind real time by more than 10 %
// of its TTFT p50 is footnoted and left out of the findings and the
// headline, counted; a smaller lag leaves a capacity in.
func TestKneeLeavesOutLaggedCapacities(t *testing.T) {
	rows := []results.Row{kneeRow(100, 0.07, 13), kneeRow(200, 0.36, 4.6), kneeRow(300, 0.80, 0.53), kneeRow(800, 0.73, 0.65)}
	rows[2].Set("sim_lag_s", 0.2)  // 75 % of its TTFT p50
	rows[3].Set("sim_lag_s", 0.01) // 3 %
	run := &analysis.Run{Dir: "knee", Files: map[string][]results.Row{File: rows}}
	var b bytes.Buffer
	report.Markdown(&b, []*analysis.Run{run}, report.Options{})
	mustContain(t, b.String(),
		"TTFT p90 650 ms there, 20.0× below the smallest capacity's; working set 0.5 GB (predicted) (1 capacities left out: kvtier sim fell behind real time there by more than 10 % of their TTFT p50).",
		"kvtier sim fell 200 ms behind real time, more than 10 % of the TTFT p50: left out of the findings",
		"Left out of these numbers: 1 row in which kvtier sim fell behind real time by more than 10 % of the TTFT p50 of their capacity",
		"The realized APC rises from 7.0 % at the smallest capacity to 73.0 % at the largest and reaches 95 % of that at 1.3 GB",
	)
	// Every capacity lagged: the workload's working set is still said.
	for i := range rows {
		rows[i].Set("sim_lag_s", 1)
	}
	b.Reset()
	writeKnee(&b, run)
	mustContain(t, b.String(), "Working set: 0.5 GB (4,800 tokens)", "No knee: 0 capacities", "Left out of these numbers: 4 rows")
}
