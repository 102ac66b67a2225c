package report

import (
	"math"
	"slices"

	"github.com/kvtier/kvtier/results"
)

// A Dist summarises a sample of one quantity: results.Stats, kvtier's
// one implementation of these statistics.
type Dist = results.Stats

// Summarize returns the distribution of the finite values in xs.
func Summarize(xs []float64) Dist { return results.Describe(xs) }

func reasonOf(r results.Row) string {
	if r.Reason == "" {
		return "(no reason given)"
	}
	return r.Reason
}

// ok reports whether r holds a usable measurement.
func ok(r results.Row) bool {
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

// column returns the values of f over the ok rows.
func column(rows []results.Row, f func(results.Row) float64) []float64 {
	var v []float64
	for _, r := range rows {
		if ok(r) {
			v = append(v, f(r))
		}
	}
	return v
}

func seconds(r results.Row) float64 { return r.Seconds }
func gbps(r results.Row) float64    { return r.GBps }

// SweepKeyOf returns the configuration a sweep row belongs to.
func SweepKeyOf(r results.Row) SweepKey { return sweepKey(r) }

// CompareSweepKeys orders configurations the way the tables list them.
func CompareSweepKeys(a, b SweepKey) int { return compareSweepKey(a, b) }

// ProbeCounted reports whether a probe row's TTFT enters the numbers: an
// ok row whose hit the server's counters confirmed (a miss counts unless
// it was shown not to be one).
func ProbeCounted(r results.Row) bool { return probeCounted(r) }

// ProbeTTFT returns a probe row's time to first token in seconds.
func ProbeTTFT(r results.Row) float64 { return probeTTFT(r) }

// OK reports whether r holds a usable measurement.
func OK(r results.Row) bool { return ok(r) }

// FmtTokens renders a prefix length as it is usually written (8k).
func FmtTokens(n int64) string { return fmtTokens(n) }

// FmtSec renders seconds with three significant digits and a unit.
func FmtSec(s float64) string { return fmtSec(s) }

// FmtBytes renders a byte count with an IEC unit.
func FmtBytes(n float64) string { return fmtBytes(n) }
