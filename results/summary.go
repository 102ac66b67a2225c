package results

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/montanaflynn/stats"
)

// A Stats is the distribution of one quantity: of a column over the ok
// rows of a group, of a sample a reader compares. Every field is NaN when
// there is no finite value: a summary never invents a zero. It is kvtier's
// one implementation of these statistics; report, plots, compare and the
// suites all use it.
type Stats struct {
	N                                     int
	Mean, Stddev, Min, P10, P50, P90, P99 float64
	Max                                   float64
	Values                                []float64 // the finite values, sorted
}

// StatNames are the statistics a summary CSV carries per column, in order;
// the column names are "<column>_<stat>", e.g. seconds_p50.
var StatNames = []string{"mean", "stddev", "min", "p10", "p50", "p90", "p99", "max"}

// Row returns the statistics in the order of StatNames.
func (s Stats) Row() []float64 {
	return []float64{s.Mean, s.Stddev, s.Min, s.P10, s.P50, s.P90, s.P99, s.Max}
}

// Describe computes the statistics of the finite values of xs (NaN and
// ±Inf are left out). Percentiles are linear interpolation between order
// statistics (the R-7 definition, NumPy's default); the standard
// deviation is the sample one and NaN for fewer than two values.
func Describe(xs []float64) Stats {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	slices.Sort(v)
	return DescribeSorted(v)
}

// DescribeSorted is Describe of finite values already in ascending
// order, which it keeps as Values without copying them.
func DescribeSorted(v []float64) Stats {
	nan := math.NaN()
	s := Stats{N: len(v), Mean: nan, Stddev: nan, Min: nan, P10: nan, P50: nan, P90: nan, P99: nan, Max: nan}
	if len(v) == 0 {
		return s
	}
	s.Values = v
	s.Mean, _ = stats.Mean(v)
	if len(v) > 1 {
		s.Stddev, _ = stats.StandardDeviationSample(v)
	}
	s.Min, s.Max = v[0], v[len(v)-1]
	s.P10, s.P50, s.P90, s.P99 = Quantile(v, 0.10), Quantile(v, 0.50), Quantile(v, 0.90), Quantile(v, 0.99)
	return s
}

// Quantile returns the p-quantile of sorted by linear interpolation
// between order statistics, NaN when sorted is empty.
func Quantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return math.NaN()
	case n == 1:
		return sorted[0]
	}
	h := p * float64(n-1)
	i := int(math.Floor(h))
	if i >= n-1 {
		return sorted[n-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}

// A Summary is one group of sample rows that share the key columns.
type Summary struct {
	Keys    []string // values of the key columns, in the order given
	N       int      // ok rows
	Skipped int      // skipped rows
	Errors  int      // error rows
	Reason  string   // the first reason of a skipped or error row
	// Stats of the numeric columns over the ok rows: "seconds", "gb_per_s" and,
	// where the rows have them, "tflops".
	Stats map[string]Stats
}

// SummaryStatColumns are the numeric columns a summary describes.
var SummaryStatColumns = []string{ColSeconds, ColGBPerSecond, ColTFLOPS}

// Summarize groups rows by the key columns, in order of first appearance,
// and describes each group.
func Summarize(rows []Row, keys []string) []Summary {
	var out []Summary
	index := map[string]int{}
	vals := map[int]map[string][]float64{}
	for _, r := range rows {
		kv := make([]string, len(keys))
		for i, k := range keys {
			kv[i] = r.Cell(k)
		}
		id := fmt.Sprintf("%q", kv)
		i, ok := index[id]
		if !ok {
			i = len(out)
			index[id] = i
			out = append(out, Summary{Keys: kv})
			vals[i] = map[string][]float64{}
		}
		s := &out[i]
		switch r.Status {
		case StatusOK:
			s.N++
			vals[i][ColSeconds] = append(vals[i][ColSeconds], r.Seconds)
			vals[i][ColGBPerSecond] = append(vals[i][ColGBPerSecond], r.GBps)
			vals[i][ColTFLOPS] = append(vals[i][ColTFLOPS], r.Float(ColTFLOPS))
		case StatusSkipped:
			s.Skipped++
		default:
			s.Errors++
		}
		if r.Status != StatusOK && s.Reason == "" {
			s.Reason = r.Reason
		}
	}
	for i := range out {
		out[i].Stats = map[string]Stats{}
		for _, c := range SummaryStatColumns {
			out[i].Stats[c] = Describe(vals[i][c])
		}
	}
	return out
}

// SummaryColumns is the header of a summary CSV grouped by keys.
func SummaryColumns(keys []string, statCols []string) []string {
	cols := append(slices.Clone(keys), "n", "n_skipped", "n_error", "reason")
	for _, c := range statCols {
		for _, s := range StatNames {
			cols = append(cols, c+"_"+s)
		}
	}
	return cols
}

// WriteSummaries writes summaries grouped by keys as CSV to path, with the
// statistics of statCols.
func WriteSummaries(path string, keys, statCols []string, sums []Summary) error {
	err := WriteFile(path, func(f io.Writer) error {
		w := csv.NewWriter(f)
		w.Write(SummaryColumns(keys, statCols))
		for _, s := range sums {
			rec := append(slices.Clone(s.Keys), fmt.Sprint(s.N), fmt.Sprint(s.Skipped), fmt.Sprint(s.Errors), s.Reason)
			for _, c := range statCols {
				for _, v := range s.Stats[c].Row() {
					rec = append(rec, FormatValue(v))
				}
			}
			w.Write(rec)
		}
		w.Flush()
		return w.Error()
	})
	if err != nil {
		return fmt.Errorf("results: writing %s: %w", path, err)
	}
	return nil
}

// SummarizeFile reads the sample CSV at in, groups its rows by the key
// columns, and writes one summary row per group to out: n, mean, stddev,
// min, p10, p50, p90, p99, max of seconds (and of gbps where present),
// with the number of ok, skipped and error rows and the first reason.
// A group of skipped rows only has n=0 and empty statistics. Key columns
// the file lacks are kept as empty values; tflops is described when the
// file has that column.
func SummarizeFile(in, out string, keys []string) error {
	rows, header, err := ReadCSV(in)
	if err != nil {
		return err
	}
	statCols := []string{ColSeconds}
	for _, c := range []string{ColGBPerSecond, ColTFLOPS} {
		if slices.Contains(header, c) {
			statCols = append(statCols, c)
		}
	}
	return WriteSummaries(out, keys, statCols, Summarize(rows, keys))
}
