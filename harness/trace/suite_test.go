package trace

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/workload"
)

// req builds a request of session s at time t whose blocks are hashes,
// each of b tokens except the last, which holds last tokens (0: b).
func req(s int, t float64, b, last int, hashes ...uint64) *workload.Request {
	in := len(hashes) * b
	if last > 0 {
		in = in - b + last
	}
	return &workload.Request{Session: s, Time: t, Input: in, Hashes: hashes, BlockTokens: b, Parent: -1, Think: math.NaN(), Sessioned: true}
}

// analyse runs the requests through an exact Analyzer.
func analyse(t *testing.T, o workload.AnalyzeOptions, reqs ...*workload.Request) *workload.Analysis {
	t.Helper()
	if o.BytesPerToken == 0 {
		o.BytesPerToken = 1
	}
	a, err := workload.NewAnalyzer(o)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		r.Index = i
		if err := a.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	b := 1
	if len(reqs) > 0 {
		b = reqs[0].BlockTokens
	}
	return a.Finish(b)
}

// mooncake returns a Mooncake line at ms with input tokens and ids.
func mooncake(ms, input int, ids string) string {
	return `{"timestamp":` + strconv.Itoa(ms) + `,"input_length":` + strconv.Itoa(input) + `,"output_length":5,"hash_ids":[` + ids + `]}`
}

func lines(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

func TestKneeRows(t *testing.T) {
	t.Parallel()
	reqs := []*workload.Request{
		req(0, 0, 10, 0, 1), req(1, 1, 10, 0, 7),
		req(0, 2, 10, 0, 1, 2), req(1, 3, 10, 0, 7, 8),
		req(0, 4, 10, 0, 1, 2, 3), req(1, 5, 10, 0, 7, 8, 9),
	}
	// The knees of TestInterleavedSessions: half the ceiling at 4
	// blocks, 70 % and more at 5.
	for _, tc := range []struct {
		knees []float64
		want  map[string]int64
	}{
		{nil, map[string]int64{"knee50": 4, "knee90": 5, "knee95": 5, "knee99": 5}},
		{[]float64{0.7, 0.5, 0.7}, map[string]int64{"knee50": 4, "knee70": 5}},
	} {
		res := &Result{Read: workload.ReadStats{BlockTokens: 10}, Analysis: analyse(t, workload.AnalyzeOptions{Knees: tc.knees}, reqs...)}
		got := map[string]int64{}
		var order []string
		for _, r := range res.kneeRows() {
			got[r.Get(results.ColMetric)] = r.Blocks
			order = append(order, r.Get(results.ColMetric))
		}
		if !maps.Equal(got, tc.want) || !slices.IsSorted(order) {
			t.Errorf("knees %v: rows %v (in order %v), want %v", tc.knees, got, order, tc.want)
		}
	}
	for _, bad := range [][]float64{{0}, {1.5}, {math.NaN()}} {
		if err := (workload.AnalyzeOptions{BytesPerToken: 1, Knees: bad}).Validate(); err == nil {
			t.Errorf("knees %v accepted", bad)
		}
	}
}

func TestAnalyzeFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, lines("{}", "[1,2]"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := workload.AnalyzeOptions{BytesPerToken: 2}
	_, err := AnalyzeFile(context.Background(), bad, "m", workload.Options{}, o)
	if !errors.Is(err, workload.ErrNoRequests) || !strings.Contains(err.Error(), "line 1: no timestamp") || !strings.Contains(err.Error(), "line 2: not a JSON object") {
		t.Errorf("all malformed: %v", err)
	}
	// A gzip-compressed trace reads the same as plain text.
	gz := filepath.Join(dir, "t.jsonl.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(lines(mooncake(0, 1024, "1,2"), mooncake(1000, 1024, "1,2")))
	zw.Close()
	if err := os.WriteFile(gz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := AnalyzeFile(context.Background(), gz, "m", workload.Options{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if a := res.Analysis; a.Requests != 2 || a.CeilingAny != 0.5 || a.Footprint.Max != 2048 || res.Name() != "t.jsonl.gz" {
		t.Errorf("gzip trace: %+v", a)
	}
}
