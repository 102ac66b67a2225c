// Package gobench converts `go test -bench` output into results rows:
// the sweep's or the transfer's columns, as `kvtier bench2csv` writes
// them.
package gobench

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/units"
)

// Suite is the suite column of rows converted from `go test -bench`.
const Suite = "bench"

// Parse reads `go test -bench` output and returns one sweep.csv-shaped
// row per benchmark result. The key=value parts of a sub-benchmark name
// (BenchmarkTiers/tier=host/layout=layerwise/copy=percopy/prefix=4096-2)
// become columns; a file configuration line ("backend: cuda") fills a
// column no name part set. sec/op becomes seconds and B/s (MB/s in the
// input) becomes gbps; B/op, allocs/op and other units are ignored. rep
// counts the results of one name from 0. Warnings list what was dropped:
// syntax errors, name parts that are not columns, results without sec/op.
func Parse(r io.Reader, name string) (rows []results.Row, warnings []string, err error) {
	return ParseDefaults(r, name, nil)
}

// ParseDefaults is Parse with default column values (backend,
// transport, model, ...) for what neither a name part nor a configuration
// line sets. `go test -bench` output does not say which backend ran, so
// the caller says it; a row whose backend stays unknown is warned about.
func ParseDefaults(r io.Reader, name string, defaults map[string]string) (rows []results.Row, warnings []string, err error) {
	warnings, err = Scan(r, name, defaults, func(row results.Row) error {
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return rows, warnings, err
	}
	return rows, warnings, nil
}

// Bounds on what Scan keeps while it reads, so that an endless
// benchmark stream cannot grow it without bound: distinct benchmark
// names (each keeps a repetition count) and distinct warnings. A line is
// bounded by benchfmt's reader (64 KiB).
const (
	maxBenchNames    = 1 << 20
	maxBenchWarnings = 100
)

// Scan reads `go test -bench` output as ParseDefaults does but
// hands each row to emit as soon as it is read, keeping nothing but a
// repetition count per benchmark name: a stream of any length is
// converted in bounded memory. An error from emit ends the scan.
func Scan(r io.Reader, name string, defaults map[string]string, emit func(results.Row) error) (warnings []string, err error) {
	return ScanFiles(r, name, defaults, func(_ results.File, row results.Row) error { return emit(row) })
}

// benchFiles maps a benchmark's base name to the suite whose rows it
// gives: BenchmarkTransfer gives transfer.csv rows, every other
// benchmark (BenchmarkTiers) sweep.csv rows.
var benchFiles = map[string]string{"Transfer": "transfer"}

// FileOf returns the results file of the benchmark called base
// (without "Benchmark").
func FileOf(base string) results.File {
	if s, ok := results.LookupSuite(benchFiles[base]); ok {
		return s.Main()
	}
	return sweepFile()
}

// ScanFiles is Scan for every suite the benchmarks give rows
// of: emit gets each row with the results file it belongs in
// (FileOf).
func ScanFiles(r io.Reader, name string, defaults map[string]string, emit func(results.File, results.Row) error) (warnings []string, err error) {
	tap := newSkipTap(r)
	sc := &scanner{name: name, defaults: defaults, emit: emit, tap: tap,
		reps: map[string]int{}, warned: map[string]bool{}}
	br := benchfmt.NewReader(tap, name)
	for br.Scan() {
		if err := sc.skipped(); err != nil {
			return sc.warnings, err
		}
		switch rec := br.Result().(type) {
		case *benchfmt.SyntaxError:
			sc.warn(rec.Error())
		case *benchfmt.Result:
			if err := sc.result(rec); err != nil {
				return sc.warnings, err
			}
		}
	}
	if err := sc.skipped(); err != nil {
		return sc.warnings, err
	}
	if err := br.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = errors.New("a line longer than 64 KiB: not benchmark output")
		}
		return sc.warnings, fmt.Errorf("%s: %w", name, err)
	}
	if sc.n == 0 {
		return sc.warnings, fmt.Errorf("%s: no benchmark results", name)
	}
	return sc.warnings, nil
}

// scanner is ScanFiles' state: the repetition count per benchmark
// name, the warnings so far and the number of rows emitted.
type scanner struct {
	name     string
	defaults map[string]string
	emit     func(results.File, results.Row) error
	tap      *skipTap
	reps     map[string]int
	warned   map[string]bool
	warnings []string
	n        int
}

// warn records s once, up to maxBenchWarnings warnings.
func (sc *scanner) warn(s string) {
	if !sc.warned[s] && len(sc.warned) < maxBenchWarnings {
		sc.warned[s] = true
		sc.warnings = append(sc.warnings, s)
	}
}

// skipped emits the rows of the skip lines read so far, one per
// configuration however often -count repeats it.
func (sc *scanner) skipped() error {
	for _, s := range sc.tap.take() {
		file := FileOf(baseOf(s.name))
		row, ws := skipRow(s, sc.defaults, file)
		for _, w := range ws {
			sc.warn(w)
		}
		if row == nil || sc.reps[s.name] > 0 || len(sc.reps) >= maxBenchNames {
			continue
		}
		sc.reps[s.name]++
		if err := sc.emit(file, *row); err != nil {
			return err
		}
		sc.n++
	}
	return nil
}

// result emits the row of one benchmark result, numbering its
// repetitions from 0.
func (sc *scanner) result(rec *benchfmt.Result) error {
	file := FileOf(string(rec.Name.Base()))
	row, ws := benchRow(rec, sc.defaults, file)
	if row != nil {
		if why := measurable(row, rec.Name); why != "" {
			row, ws = nil, append(ws, why)
		}
	}
	for _, w := range ws {
		sc.warn(w)
	}
	if row == nil {
		return nil
	}
	base, _ := strings.CutSuffix(string(rec.Name), gomaxprocsSuffix(rec.Name))
	if _, ok := sc.reps[base]; !ok && len(sc.reps) >= maxBenchNames {
		return fmt.Errorf("%s: more than %d distinct benchmark names", sc.name, maxBenchNames)
	}
	row.Rep = sc.reps[base]
	sc.reps[base]++
	if err := sc.emit(file, *row); err != nil {
		return err
	}
	sc.n++
	return nil
}

// baseOf is the benchmark's name without "Benchmark" and its
// sub-benchmarks: Tiers of BenchmarkTiers/tier=host.
func baseOf(name string) string {
	return string(benchfmt.Name(name).Base())
}

func gomaxprocsSuffix(n benchfmt.Name) string {
	_, parts := n.Parts()
	if len(parts) > 0 && strings.HasPrefix(string(parts[len(parts)-1]), "-") {
		return string(parts[len(parts)-1])
	}
	return ""
}

// benchColumns maps a name or file-config key to the column it fills.
var benchColumns = map[string]string{
	"tier": results.ColTier, "layout": results.ColLayout, "backend": results.ColBackend,
	"transport": results.ColTransport, "model": results.ColModel,
	"prefix": results.ColPrefixTokens, "prefix_tokens": results.ColPrefixTokens, "L": results.ColPrefixTokens,
	"size": results.ColBytes, "blocks": results.ColBlocks, "bytes": results.ColBytes, "chunk_bytes": results.ColChunkBytes,
}

// sweepFile is the sweep suite's sample file as registered (its columns
// are the bench rows' columns); zero when no sweep suite is registered.
func sweepFile() results.File {
	if s, ok := results.LookupSuite("sweep"); ok {
		return s.Main()
	}
	return results.File{}
}

// benchColumn returns the column of file a name or config key fills.
func benchColumn(file results.File, key string) (string, bool) {
	if c, ok := benchColumns[key]; ok {
		return c, true
	}
	if slices.Contains(file.Names(), key) {
		return key, true
	}
	return "", false
}

// benchCells fills one row's columns from a result's name parts, its
// configuration lines and the defaults: the first to set a column wins.
type benchCells struct {
	row   results.Row
	file  results.File
	name  benchfmt.Name
	set   map[string]bool
	warns []string
	bad   bool // a value did not parse: the result is dropped
}

func (b *benchCells) apply(key, val, where string) {
	col, known := benchColumn(b.file, key)
	if !known {
		b.warns = append(b.warns, fmt.Sprintf("%s %q is not a %s column; dropped", where, key, strings.TrimSuffix(b.file.Name, ".csv")))
		return
	}
	if b.set[col] {
		return
	}
	if err := setBenchCell(&b.row, col, val); err != nil {
		b.warns = append(b.warns, fmt.Sprintf("%s: %s=%s: %v; result dropped", b.name, key, val, err))
		b.bad = true
		return
	}
	b.set[col] = true
}

// fromName applies the key=value parts of the benchmark's name.
func (b *benchCells) fromName() {
	_, parts := b.name.Parts()
	for _, p := range parts {
		s := string(p)
		if strings.HasPrefix(s, "-") {
			continue // GOMAXPROCS
		}
		s = strings.TrimPrefix(s, "/")
		k, v, isKV := strings.Cut(s, "=")
		if !isKV {
			b.warns = append(b.warns, fmt.Sprintf("name part %q is not key=value; dropped", s))
			continue
		}
		b.apply(k, v, "name key")
	}
}

// benchRow is the row of one benchmark result in file's columns, or nil
// with why it was dropped.
func benchRow(res *benchfmt.Result, defaults map[string]string, file results.File) (*results.Row, []string) {
	b := &benchCells{file: file, name: res.Name, set: map[string]bool{},
		row: results.Row{Suite: Suite, Status: results.StatusOK, Seconds: math.NaN(), GBps: math.NaN(), Extra: map[string]string{}}}
	b.fromName()
	for _, c := range res.Config {
		if _, known := benchColumn(file, c.Key); known && c.File {
			b.apply(c.Key, string(c.Value), "config key")
		}
	}
	for k, v := range defaults {
		if v != "" {
			b.apply(k, v, "default")
		}
	}
	if b.bad {
		return nil, b.warns
	}
	blockGeometry(&b.row, res, b.set)
	if b.row.Backend == "" {
		b.warns = append(b.warns, "backend unknown (no backend= in the names, no \"backend:\" line, no --backend)")
	}
	if drop := benchValues(&b.row, res, b.set); drop != "" {
		return nil, append(b.warns, drop)
	}
	return &b.row, b.warns
}

// benchValues sets a row's measured values from a result's units:
// seconds from sec/op, the byte rate from B/s (or GB/s, or bytes over
// seconds), flops and TFLOP/s where a name or config did not. It returns
// why the result is dropped, "" when it is kept.
func benchValues(row *results.Row, res *benchfmt.Result, set map[string]bool) string {
	v, found := value(res, "sec/op", "ns/op", 1e9)
	if !found {
		return fmt.Sprintf("%s: no sec/op; result dropped", res.Name)
	}
	row.Seconds = v
	if v, found := value(res, "B/s", "MB/s", 1e3); found {
		row.GBps = v
		if u, _ := unitOf(res, "B/s"); u != "MB/s" {
			row.GBps = v / 1e9
		}
	} else if v, found := res.Value("GB/s"); found {
		row.GBps = v
	} else if row.Bytes > 0 && row.Seconds > 0 {
		row.GBps = float64(row.Bytes) / row.Seconds / 1e9
	}
	if v, found := res.Value("flop/op"); found && !set[results.ColFLOPS] {
		row.Extra[results.ColFLOPS] = results.FormatValue(v)
	}
	if v, found := res.Value("TFLOP/s"); found && !set[results.ColTFLOPS] {
		row.Extra[results.ColTFLOPS] = results.FormatValue(v)
	}
	return ""
}

// measurable says why a row's measured values are none (a time that is
// not positive and finite, a negative or infinite rate), "" when they
// are: a row is not kept ok with a figure no measurement gives.
func measurable(row *results.Row, name benchfmt.Name) string {
	if !(row.Seconds > 0) || math.IsInf(row.Seconds, 0) {
		return fmt.Sprintf("%s: sec/op %g is not a time; result dropped", name, row.Seconds)
	}
	if row.GBps < 0 || math.IsInf(row.GBps, 0) {
		return fmt.Sprintf("%s: a rate of %g GB/s is not one; result dropped", name, row.GBps)
	}
	for _, col := range []string{results.ColFLOPS, results.ColTFLOPS} {
		if v, ok := row.Extra[col]; ok {
			if f, err := strconv.ParseFloat(v, 64); err != nil || !(f >= 0) || math.IsInf(f, 0) {
				return fmt.Sprintf("%s: %s %s is not a figure; result dropped", name, col, v)
			}
		}
	}
	return ""
}

// blockGeometry fills the blocks and bytes of a row with a prefix from
// the "block_tokens" and "block_bytes" configuration lines of
// BenchmarkTiers, as a sweep fills them: bytes only for a tier that
// moves them (one with a layout).
func blockGeometry(row *results.Row, res *benchfmt.Result, set map[string]bool) {
	bt, err1 := strconv.ParseInt(string(res.GetConfig("block_tokens")), 10, 64)
	bb, err2 := strconv.ParseInt(string(res.GetConfig("block_bytes")), 10, 64)
	if err1 != nil || err2 != nil || bt <= 0 || bb <= 0 || row.PrefixTokens <= 0 {
		return
	}
	if !set[results.ColBlocks] {
		row.Blocks = (row.PrefixTokens + bt - 1) / bt
	}
	if !set[results.ColBytes] && row.Layout != "" {
		row.Bytes = row.Blocks * bb
	}
}

// value returns the value in unit, taken from the untidied origUnit
// divided by the power of ten div where the input said so, shifting the
// decimal point of the number as written: 11000000 ns/op is 0.011 s, not
// the 0.011000000000000001 that a multiplication by 1e-9 gives.
func value(res *benchfmt.Result, unit, origUnit string, div float64) (float64, bool) {
	for _, v := range res.Values {
		if v.Unit != unit {
			continue
		}
		if v.OrigUnit == origUnit {
			return shift(v.OrigValue, div), true
		}
		return v.Value, true
	}
	return 0, false
}

// shift returns x / div for a power of ten div, rounded once from the
// decimal form of x.
func shift(x, div float64) float64 {
	d := strconv.FormatFloat(x, 'g', -1, 64)
	if strings.Contains(d, "e") {
		return x / div // already in exponent form
	}
	v, err := strconv.ParseFloat(d+"e-"+strconv.Itoa(int(math.Round(math.Log10(div)))), 64)
	if err != nil {
		return x / div
	}
	return v
}

func unitOf(res *benchfmt.Result, unit string) (string, bool) {
	for _, v := range res.Values {
		if v.Unit == unit {
			return v.OrigUnit, true
		}
	}
	return "", false
}

// setBenchCell sets column col from a benchmark name's key=value part.
func setBenchCell(r *results.Row, col, val string) error {
	// Benchmark names write sizes as people do ("8k", "16MiB"): turn those
	// into base units, then set the cell as a CSV reader would.
	switch col {
	case results.ColPrefixTokens:
		n, err := units.ParseTokens(val)
		if err != nil {
			return err
		}
		val = strconv.Itoa(n)
	case results.ColBytes, results.ColChunkBytes:
		n, err := units.ParseBytes(val)
		if err != nil {
			return err
		}
		val = strconv.FormatInt(n, 10)
	case results.ColTier, results.ColLayout, results.ColBackend, results.ColTransport, results.ColModel, results.ColBlocks:
	default:
		r.Extra[col] = val
		return nil
	}
	return r.SetCell(col, val)
}

// SweepHeader is the header of a sweep.csv: the common columns, then the
// sweep's own.
func SweepHeader() []string { return sweepFile().Header() }

// WriteRowsCSV writes rows under header to w in the form results.CSV
// writes them (integers 0 as empty, floats shortest, NaN as empty).
func WriteRowsCSV(w io.Writer, header []string, rows []results.Row) error {
	rw, err := NewRowWriter(w, header)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := rw.Write(r); err != nil {
			return err
		}
	}
	return rw.Flush()
}

// A RowWriter writes rows under a header, one at a time, in the form
// WriteRowsCSV writes them.
type RowWriter struct {
	cw     *csv.Writer
	header []string
}

// NewRowWriter writes header to w and returns a writer of rows under it.
func NewRowWriter(w io.Writer, header []string) (*RowWriter, error) {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return nil, err
	}
	return &RowWriter{cw: cw, header: header}, nil
}

// Write writes one row.
func (rw *RowWriter) Write(r results.Row) error {
	if r.Status == "" {
		return errors.New("gobench: row has no status")
	}
	rec := make([]string, len(rw.header))
	for i, c := range rw.header {
		rec[i] = r.Cell(c)
	}
	return rw.cw.Write(rec)
}

// Flush writes what is buffered and returns the first error of any write.
func (rw *RowWriter) Flush() error {
	rw.cw.Flush()
	return rw.cw.Error()
}
