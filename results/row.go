// Package results holds kvtier's result model: one Row per measured sample
// in base units (seconds, bytes), sinks that append rows to CSV as they are
// measured, readers for the analysis commands, summaries and the run
// manifest. It is a leaf: of kvtier it imports only the registry package.
package results

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
)

// A Status says whether a row holds a measurement.
type Status string

// Row statuses. A skipped row is a measurement that could not run here
// (no libcuda, no RDMA device, endpoint refused); an error row is one that
// ran and failed (a data mismatch, a peer that vanished). Neither carries
// a time: their seconds are NaN, written as an empty cell, never a zero.
const (
	StatusOK      Status = "ok"
	StatusSkipped Status = "skipped"
	StatusError   Status = "error"
)

// CommonColumns are the names of the common columns (CommonSchema),
// present in every sample CSV in this order.
var CommonColumns = Names(CommonSchema)

// A Row is one sample. The fields are the common columns; suite-specific
// columns (endpoint, ttft_s, copy, path, ...) live in Extra under their
// column name, already formatted. Integer fields hold 0 where they do not
// apply; float fields hold NaN where no value exists.
type Row struct {
	Suite        string // "sweep", "transfer", "probe", "mb1", ...
	Backend      string // "host" (CPU stand-in) or "cuda"; "http" for probes
	Transport    string // "memcpy", "tcp", "verbs", "http", ...
	Tier         string
	Layout       string
	Model        string
	PrefixTokens int64
	Blocks       int64
	ChunkBytes   int64
	Bytes        int64
	Rep          int
	Seconds      float64
	GBps         float64 // payload bytes / seconds / 1e9
	Status       Status
	Reason       string
	Extra        map[string]string
}

// NewRow returns a row of the given suite with NaN times, ready to fill.
func NewRow(suite string) Row {
	return Row{Suite: suite, Seconds: math.NaN(), GBps: math.NaN(), Extra: map[string]string{}}
}

// Set stores a suite-specific column, formatting v as the CSV will hold it:
// floats in shortest round-trip form (NaN as empty), bools as true/false.
func (r *Row) Set(col string, v any) {
	if r.Extra == nil {
		r.Extra = map[string]string{}
	}
	r.Extra[col] = FormatValue(v)
}

// Get returns column col's text as the CSV holds it ("" when absent):
// a common column's (Cell) or a suite-specific one's.
func (r Row) Get(col string) string { return r.Cell(col) }

// Float returns column col as a float, NaN when absent, empty or not a
// number.
func (r Row) Float(col string) float64 {
	s := r.Cell(col)
	if s == "" {
		return math.NaN()
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// Int returns integer column col and whether it holds one: decimal
// digits, or an integral number in float form as older kvtier wrote
// some (3.7748736e+09). Absent, empty or fractional: 0, false.
func (r Row) Int(col string) (int64, bool) {
	s := r.Cell(col)
	if s == "" {
		return 0, false
	}
	return ParseInt(s)
}

// Bool reports whether column col holds true.
func (r Row) Bool(col string) bool {
	b, err := strconv.ParseBool(r.Cell(col))
	return err == nil && b
}

// SetTime records a measured duration and derives GB/s from Bytes.
func (r *Row) SetTime(seconds float64) {
	r.Seconds = seconds
	r.Status = StatusOK
	if r.Bytes > 0 && seconds > 0 {
		r.GBps = float64(r.Bytes) / seconds / 1e9
	} else {
		r.GBps = math.NaN()
	}
}

// Skip marks the row as a measurement that could not run, with the reason.
func (r *Row) Skip(reason string) {
	r.Status, r.Reason = StatusSkipped, reason
	r.Seconds, r.GBps = math.NaN(), math.NaN()
}

// Fail marks the row as a measurement that ran and failed.
func (r *Row) Fail(err error) {
	r.Status, r.Reason = StatusError, err.Error()
	r.Seconds, r.GBps = math.NaN(), math.NaN()
}

// FormatValue formats a cell value the way every sink writes it.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ""
		}
		return formatFloat(x)
	case float32:
		return FormatValue(float64(x))
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case Status:
		return string(x)
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

// formatFloat writes x as people read it: positional digits wherever that
// is exact and not absurdly long, so an integral value (a count of tokens,
// bytes per second) reads as an integer, not 1.154048e+06; exponent form
// only below 1e-4 and from 1e21, where positional digits would run on.
func formatFloat(x float64) string {
	if a := math.Abs(x); a != 0 && (a < 1e-4 || a >= 1e21) {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// Cell returns the text of column col for this row as every sink writes
// it: common columns formatted (integers 0 and NaN floats as empty),
// suite-specific columns from Extra ("" when absent). It is the inverse of
// what ReadCSV parses.
func (r Row) Cell(col string) string {
	switch p := r.common(col).(type) {
	case *string:
		return *p
	case *int64:
		return zeroEmpty(*p)
	case *int:
		return strconv.Itoa(*p)
	case *float64:
		return FormatValue(*p)
	case *Status:
		return string(*p)
	}
	return r.Extra[col]
}

func zeroEmpty(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// SetCell parses text into column col of r, as a CSV reader does: the
// inverse of Cell. Columns that are not common ones land in Extra.
func (r *Row) SetCell(col, text string) error {
	var err error
	switch p := r.common(col).(type) {
	case *string:
		*p = text
	case *int64:
		*p, err = parseInt(text)
		err = cmp.Or(err, notNegative(float64(*p)))
	case *int:
		var n int64
		n, err = parseInt(text)
		*p, err = int(n), cmp.Or(err, notNegative(float64(n)))
	case *float64:
		*p, err = parseFloat(text)
		err = cmp.Or(err, notNegative(*p))
	case *Status:
		*p = Status(text)
	default:
		if r.Extra == nil {
			r.Extra = map[string]string{}
		}
		r.Extra[col] = text
	}
	if err != nil {
		return fmt.Errorf("column %s: %w", col, err)
	}
	return nil
}

// common returns a pointer to the field that holds common column col,
// nil for a suite-specific column: the one list of which column is which
// field, for Cell and SetCell.
func (r *Row) common(col string) any {
	switch col {
	case ColSuite:
		return &r.Suite
	case ColBackend:
		return &r.Backend
	case ColTransport:
		return &r.Transport
	case ColTier:
		return &r.Tier
	case ColLayout:
		return &r.Layout
	case ColModel:
		return &r.Model
	case ColPrefixTokens:
		return &r.PrefixTokens
	case ColBlocks:
		return &r.Blocks
	case ColChunkBytes:
		return &r.ChunkBytes
	case ColBytes:
		return &r.Bytes
	case ColRep:
		return &r.Rep
	case ColSeconds:
		return &r.Seconds
	case ColGBPerSecond:
		return &r.GBps
	case ColStatus:
		return &r.Status
	case ColReason:
		return &r.Reason
	}
	return nil
}

// parseInt parses a common integer cell: digits, or an integral number
// in float form (as older kvtier wrote some).
func parseInt(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if m, ok := ParseInt(s); ok {
			return m, nil
		}
	}
	return n, err
}

// notNegative refuses what no common numeric column holds: a negative
// count, size or time, or an infinite one (a corrupt or hand-edited CSV);
// NaN is an empty cell.
func notNegative(v float64) error {
	if v < 0 || math.IsInf(v, 0) {
		return fmt.Errorf("%g is no count, size or time", v)
	}
	return nil
}

func parseFloat(s string) (float64, error) {
	if s == "" {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}
