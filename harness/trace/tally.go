package trace

import (
	"math"
	"slices"

	"github.com/kvtier/kvtier/results"
)

// A tally gathers the statistics of one predicted figure over a trace's
// requests in memory that does not grow with them: every value while
// there are at most tallyExact, exactly as results.Describe gives them;
// past that, a histogram of buckets 2⁻¹⁰ (about 0.1 %) wide, each
// standing for its values by their mean (so a bucket of equal values is
// exact), with the count, mean, standard deviation, minimum and maximum
// still exact. NaN and ±Inf are left out, as Describe leaves them.
type tally struct {
	added  int       // values added, NaN and ±Inf included
	values []float64 // the finite values, while buckets is nil
	// buckets are the histogram's, by bucketKey: bucket k is
	// buckets[k>>bucketBits][k&(1<<bucketBits-1)], the 2^bucketBits
	// buckets of one sign and exponent allocated at their first value.
	buckets []*[1 << bucketBits]bucket
	// Welford's running mean and sum of squared deviations, and the
	// extremes, of the finite values once buckets is used.
	n           int
	mean, m2    float64
	least, most float64
}

// A bucket is the finite values of one histogram bucket: their count and
// running mean (which stays exact while they are equal).
type bucket struct {
	n    int
	mean float64
}

// tallyExact is how many values a tally keeps: 512 KiB of them.
const tallyExact = 1 << 16

// bucketBits is the number of a float64's mantissa bits a bucket keeps.
const bucketBits = 10

// add adds one value.
func (t *tally) add(x float64) {
	t.added++
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return
	}
	if t.buckets == nil {
		if t.values = append(t.values, x); len(t.values) <= tallyExact {
			return
		}
		t.buckets = make([]*[1 << bucketBits]bucket, 1<<12) // sign and exponent
		t.least, t.most = x, x
		vs := t.values
		t.values = nil
		for _, v := range vs {
			t.count(v)
		}
		return
	}
	t.count(x)
}

// count adds finite x to the histogram and the exact statistics.
func (t *tally) count(x float64) {
	t.n++
	d := x - t.mean
	t.mean += d / float64(t.n)
	t.m2 += d * (x - t.mean)
	t.least, t.most = min(t.least, x), max(t.most, x)
	k := bucketKey(x)
	run := t.buckets[k>>bucketBits]
	if run == nil {
		run = new([1 << bucketBits]bucket)
		t.buckets[k>>bucketBits] = run
	}
	b := &run[k&(1<<bucketBits-1)]
	b.n++
	b.mean += (x - b.mean) / float64(b.n)
}

// bucketKey maps x to its bucket, in the order of the values: the
// float's bits made to sort as integers, less the low mantissa bits.
func bucketKey(x float64) uint64 {
	b := math.Float64bits(x)
	if b>>63 != 0 {
		b = ^b
	} else {
		b |= 1 << 63
	}
	return b >> (52 - bucketBits)
}

// stats returns the statistics of the values added, without the values.
func (t *tally) stats() results.Stats {
	if t.buckets == nil {
		st := results.Describe(t.values)
		st.Values = nil
		return st
	}
	var reps []float64 // each bucket's mean, in order
	var ends []int     // the values in buckets up to each
	n := 0
	for _, run := range t.buckets {
		if run == nil {
			continue
		}
		for _, b := range run {
			if b.n > 0 {
				n += b.n
				reps, ends = append(reps, b.mean), append(ends, n)
			}
		}
	}
	// The i-th smallest value (from 0), by its bucket.
	at := func(i int) float64 {
		j, _ := slices.BinarySearch(ends, i+1)
		return reps[j]
	}
	quantile := func(p float64) float64 {
		h := p * float64(t.n-1)
		i := int(math.Floor(h))
		if i >= t.n-1 {
			return t.most
		}
		return at(i) + (h-float64(i))*(at(i+1)-at(i))
	}
	st := results.Stats{N: t.n, Mean: t.mean, Stddev: math.Sqrt(t.m2 / float64(t.n-1)), Min: t.least, Max: t.most}
	st.P10, st.P50, st.P90, st.P99 = quantile(0.10), quantile(0.50), quantile(0.90), quantile(0.99)
	return st
}
