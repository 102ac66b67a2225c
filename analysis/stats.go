package analysis

import (
	"math"
	"slices"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// A Dist summarises a sample of one quantity: results.Stats, kvtier's
// one implementation of these statistics.
type Dist = results.Stats

// Summarize returns the distribution of the finite values in xs.
func Summarize(xs []float64) Dist { return results.Describe(xs) }

// ReasonOf is the reason a row says it did not measure, or its status.
func ReasonOf(r results.Row) string {
	if r.Reason == "" {
		return "(no reason given)"
	}
	return r.Reason
}

// OK reports whether r holds a usable measurement.
func OK(r results.Row) bool {
	return r.Status == results.StatusOK && !math.IsNaN(r.Seconds) && !math.IsInf(r.Seconds, 0)
}

// GroupBy partitions rows by key: it returns the keys sorted by less and
// each key's rows in the order they came.
func GroupBy[K comparable](rows []results.Row, key func(results.Row) K, less func(a, b K) int) ([]K, map[K][]results.Row) {
	m := map[K][]results.Row{}
	var keys []K
	for _, r := range rows {
		k := key(r)
		if _, seen := m[k]; !seen {
			keys = append(keys, k)
		}
		m[k] = append(m[k], r)
	}
	slices.SortStableFunc(keys, less)
	return keys, m
}

// Column returns the values of f over the ok rows.
func Column(rows []results.Row, f func(results.Row) float64) []float64 {
	var v []float64
	for _, r := range rows {
		if OK(r) {
			v = append(v, f(r))
		}
	}
	return v
}

// MaxSimLag is the most a row measured against kvtier sim may have seen
// it fall behind real time, as a share of the time the row measures
// (its seconds), for the row's figure to count.
const MaxSimLag = 0.1

// Lagged reports whether a row measured against kvtier sim saw it fall
// behind real time (its sim_lag_s) by more than MaxSimLag of the time the
// row measures: its seconds, or where the row is a run of many requests
// (replay_run.csv, knee.csv: a ttft_p50_s column) its TTFT p50, the
// shortest figure it reports. Its figure is this machine's load, not the
// model's. Such rows are footnoted and left out of summaries, with their
// count.
func Lagged(r results.Row) bool {
	measured := r.Seconds
	if p50 := r.Float(results.ColTTFTP50); !math.IsNaN(p50) {
		measured = p50
	}
	return r.Float(results.ColSimLag) > MaxSimLag*measured
}

// Unlagged returns the rows that are not Lagged.
func Unlagged(rows []results.Row) []results.Row {
	var out []results.Row
	for _, r := range rows {
		if !Lagged(r) {
			out = append(out, r)
		}
	}
	return out
}

// Seconds is a row's seconds, for Column.
func Seconds(r results.Row) float64 { return r.Seconds }

// GBps is a row's byte rate in GB/s, for Column.
func GBps(r results.Row) float64 { return r.GBps }

// ProbeCounted reports whether a probe row's TTFT enters the numbers: an
// ok row whose tier the server's counters confirmed (a miss counts unless
// it was shown not to be one).
func ProbeCounted(r results.Row) bool {
	if !OK(r) {
		return false
	}
	v := r.Get(results.ColVerified)
	if tierspec.Computes(r.Tier) {
		return v != "false"
	}
	return v == "true"
}

// ProbeTTFT is a probe row's TTFT: ttft_s, or seconds in rows written
// before that column.
func ProbeTTFT(r results.Row) float64 {
	if t := r.Float(results.ColTTFT); !math.IsNaN(t) {
		return t
	}
	return r.Seconds
}

// CompareBool orders false before true, as cmp.Compare orders numbers.
func CompareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
