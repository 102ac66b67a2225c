package report

import (
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"

	"github.com/kvtier/kvtier/results"
)

// A Dist summarises a sample of one quantity.
type Dist struct {
	N                       int
	Mean                    float64
	Min, P10, P50, P90, P99 float64
	Max                     float64
	Values                  []float64 // sorted
}

// Summarize returns the distribution of the finite values in xs; a Dist
// with N == 0 when there are none.
func Summarize(xs []float64) Dist {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Dist{}
	}
	sort.Float64s(v)
	q := func(p float64) float64 { return Quantile(v, p) }
	return Dist{
		N: len(v), Mean: stat.Mean(v, nil),
		Min: v[0], P10: q(0.10), P50: q(0.50), P90: q(0.90), P99: q(0.99), Max: v[len(v)-1],
		Values: v,
	}
}

// Quantile returns the p-quantile of sorted by linear interpolation
// between order statistics (the R-7 definition, as NumPy's default).
func Quantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return math.NaN()
	case n == 1:
		return sorted[0]
	}
	h := p * float64(n-1)
	lo := math.Floor(h)
	i := int(lo)
	if i >= n-1 {
		return sorted[n-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

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

// groupBy partitions rows by key, keeping keys in the order given by less.
func groupBy[K comparable](rows []results.Row, key func(results.Row) K, less func(a, b K) int) ([]K, map[K][]results.Row) {
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
