package results

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A Type is what a column's cells hold: how the CSV writer formats them
// and how a reader parses them.
type Type string

// Column types. An empty cell is "no value" in every type: a row that
// was skipped, a figure that does not apply, NaN.
const (
	TypeString Type = "string" // text, written as it is
	TypeInt    Type = "int"    // an integer, written in decimal digits, never in exponent form
	TypeFloat  Type = "float"  // a number, in shortest round-trip form (1e+06 possible)
	TypeBool   Type = "bool"   // true | false
)

// A Column is one column of a results CSV, declared once by the suite
// that writes it: its name, what its cells hold, their unit and a line
// that says what it means. docs/columns.md is generated from these.
type Column struct {
	Name string
	Type Type
	Unit string // one of Units: "s", "B", "GB/s", "tokens", ...; "" for none
	Doc  string // one line: what the column holds
}

// Units are the units a column may be declared in.
var Units = []string{
	"",         // none: text, a flag, an identifier, a dimensionless label
	"s",        // seconds
	"B",        // bytes
	"B/s",      // bytes per second
	"GB/s",     // 10^9 bytes per second (never Gb/s)
	"FLOP",     // floating-point operations
	"TFLOP/s",  // 10^12 FLOP per second
	"tokens",   // tokens
	"blocks",   // KV blocks (the server's or the trace's block)
	"req/s",    // requests per second
	"tokens/s", // tokens per second
	"s/token",  // seconds per token (a cost fit's linear coefficient)
	"s/token²", // seconds per token pair (a cost fit's quadratic coefficient)
	"fraction", // a share between 0 and 1
	"ratio",    // a quotient of two like quantities (×)
	"pp",       // percentage points
	"count",    // a number of things (rows, samples, streams, ...)
}

// Text declares a text column.
func Text(name, doc string) Column { return Column{Name: name, Type: TypeString, Doc: doc} }

// Int declares an integer column in unit.
func Int(name, unit, doc string) Column {
	return Column{Name: name, Type: TypeInt, Unit: unit, Doc: doc}
}

// Float declares a numeric column in unit.
func Float(name, unit, doc string) Column {
	return Column{Name: name, Type: TypeFloat, Unit: unit, Doc: doc}
}

// Bool declares a true/false column.
func Bool(name, doc string) Column { return Column{Name: name, Type: TypeBool, Doc: doc} }

// Names returns the names of cols, in order.
func Names(cols []Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// Check reports what is wrong with a column's declaration: no name, an
// unknown type, a unit not in Units, no doc or a doc of several lines.
func (c Column) Check() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("a column without a name")
	case !slices.Contains([]Type{TypeString, TypeInt, TypeFloat, TypeBool}, c.Type):
		return fmt.Errorf("column %s: type %q", c.Name, c.Type)
	case !slices.Contains(Units, c.Unit):
		return fmt.Errorf("column %s: unit %q is not one of results.Units", c.Name, c.Unit)
	case strings.TrimSpace(c.Doc) == "" || strings.Contains(c.Doc, "\n"):
		return fmt.Errorf("column %s: doc %q: want one line", c.Name, c.Doc)
	}
	return nil
}

// Format returns text, a cell of the column as a sink formatted it,
// written as the column's type says: an integer column's cell in
// decimal digits (3774873600, not 3.7748736e+09). A cell that is not a
// number of the type is returned as it is.
func (c Column) Format(text string) string {
	if c.Type != TypeInt || text == "" {
		return text
	}
	if _, err := strconv.ParseInt(text, 10, 64); err == nil {
		return text
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return text
	}
	return strconv.FormatInt(int64(f), 10)
}

// ParseInt parses a cell of an integer column: decimal digits, or an
// integral number in any float form (as older kvtier wrote some).
func ParseInt(text string) (int64, bool) {
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// CommonSchema declares CommonColumns.
var CommonSchema = []Column{
	Text(ColSuite, "the suite that wrote the row (sweep, transfer, probe, ...)"),
	Text(ColBackend, "cuda (a GPU), host (the CPU standing in for a GPU), http (a server), trace (computed from a trace)"),
	Text(ColTransport, "how the bytes moved: memcpy, cuda, tcp, verbs, uring, http, ..."),
	Text(ColTier, "the tier measured: hbm, host, remote, disk, recompute; probe: miss, gpu, cpu, remote"),
	Text(ColLayout, "how the KV was laid out: layerwise, blockwise, contiguous"),
	Text(ColModel, "the model whose KV geometry sized the transfer"),
	Int(ColPrefixTokens, "tokens", "the prefix length L (replay, knee: the prompt's tokens)"),
	Int(ColBlocks, "blocks", "KV blocks of the prefix"),
	Int(ColChunkBytes, "B", "bytes of one copied chunk"),
	Int(ColBytes, "B", "payload bytes of one sample"),
	Int(ColRep, "count", "repetition, from 0"),
	Float(ColSeconds, "s", "the measured time of one sample (probe, replay, knee: TTFT; mb1: prefill TTFT); empty unless ok"),
	Float(ColGBPerSecond, "GB/s", "bytes / seconds / 10^9; empty unless ok"),
	Text(ColStatus, "ok | skipped (could not run here) | error (ran and failed)"),
	Text(ColReason, "why a row was skipped or failed"),
}

// commonTypes maps each common column to its declaration.
var commonTypes = func() map[string]Column {
	m := map[string]Column{}
	for _, c := range CommonSchema {
		m[c.Name] = c
	}
	return m
}()

// Schema returns the declarations of names: the common ones as
// CommonSchema declares them, every other a text column, so a file
// opened by name alone writes its cells as they were set.
func Schema(names []string) []Column {
	out := make([]Column, len(names))
	for i, n := range names {
		if c, ok := commonTypes[n]; ok {
			out[i] = c
		} else {
			out[i] = Column{Name: n, Type: TypeString}
		}
	}
	return out
}
