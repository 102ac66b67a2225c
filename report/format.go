package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/units"
)

// Dash stands in a table cell for a value that cannot exist; a footnote
// says why.
const Dash = "—"

// A table is a Markdown table with footnotes. Columns whose cells are all
// numbers (or dashes) are right-aligned.
type table struct {
	header []string
	rows   [][]string
	notes  []string // footnote texts; note i is marked "[i+1]"
	// hoist moves a column whose cell is the same in every row (of two
	// or more) out of the table into one line above it: a label said
	// once, not in every row.
	hoist bool
	// inline writes the footnotes on one line (the headline's tables).
	inline bool
}

func newTable(header ...string) *table { return &table{header: header, hoist: true} }

// numeric reports whether column i holds numbers only.
func (t *table) numeric(i int) bool {
	digits := false
	for _, r := range t.rows {
		c := strings.TrimLeft(r[i], "+-*") // *…*: a predicted figure in italics
		switch {
		case c == "":
		case c[0] >= '0' && c[0] <= '9':
			digits = true
		case strings.HasPrefix(c, Dash):
		default:
			return false
		}
	}
	return digits
}

func (t *table) add(cells ...string) {
	for i, c := range cells {
		if c == "" || strings.Contains(c, "NaN") || strings.Contains(c, "Inf") {
			cells[i] = Dash // never an empty or NaN cell; callers add a note
		}
	}
	t.rows = append(t.rows, cells)
}

// note returns the marker of footnote text, adding it once.
func (t *table) note(text string) string {
	for i, n := range t.notes {
		if n == text {
			return fmt.Sprintf("[%d]", i+1)
		}
	}
	t.notes = append(t.notes, text)
	return fmt.Sprintf("[%d]", len(t.notes))
}

// dash returns Dash marked with footnote text.
func (t *table) dash(text string) string { return Dash + " " + t.note(text) }

// constant returns the columns whose cell is the same in every row, when
// hoisting applies, and the others.
func (t *table) constant() (same, keep []int) {
	for i := range t.header {
		one := t.hoist && len(t.rows) >= 2
		for _, r := range t.rows {
			one = one && r[i] == t.rows[0][i]
		}
		if one {
			same = append(same, i)
		} else {
			keep = append(keep, i)
		}
	}
	if len(keep) == 0 {
		return nil, same
	}
	return same, keep
}

func (t *table) write(w io.Writer) {
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	same, keep := t.constant()
	if len(same) > 0 {
		var parts []string
		for _, i := range same {
			parts = append(parts, t.header[i]+": "+t.rows[0][i])
		}
		fmt.Fprintf(w, "In every row: %s.\n\n", strings.Join(parts, "; "))
	}
	pick := func(cells []string) string {
		out := make([]string, len(keep))
		for j, i := range keep {
			out[j] = esc(cells[i])
		}
		return strings.Join(out, " | ")
	}
	fmt.Fprintf(w, "| %s |\n", pick(t.header))
	seps := make([]string, len(keep))
	for j, i := range keep {
		seps[j] = "---"
		if t.numeric(i) {
			seps[j] = "--:"
		}
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
	for _, r := range t.rows {
		fmt.Fprintf(w, "| %s |\n", pick(r))
	}
	t.writeNotes(w)
	fmt.Fprintln(w)
}

// writeNotes writes the footnotes, one a line or all on one.
func (t *table) writeNotes(w io.Writer) {
	if len(t.notes) == 0 {
		return
	}
	fmt.Fprintln(w)
	if t.inline {
		var ns []string
		for i, n := range t.notes {
			ns = append(ns, fmt.Sprintf("[%d] %s", i+1, n))
		}
		fmt.Fprintln(w, strings.Join(ns, " · "))
		return
	}
	for i, n := range t.notes {
		fmt.Fprintf(w, "[%d] %s  \n", i+1, n)
	}
}

// String returns the table as write writes it.
func (t *table) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

// fmtSec renders seconds with three significant digits in the unit
// that suits them; "" for NaN so the table marks it.
func fmtSec(s float64) string { return units.FormatSeconds(s) }

// fmtMS renders seconds as milliseconds, the unit of the MB1 table.
func fmtMS(s float64) string {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return ""
	}
	return sig(s * 1e3)
}

// fmtGB renders bytes as decimal gigabytes with one decimal, the unit of
// the reference's capacity table; "" for NaN.
func fmtGB(b float64) string { return fixed1(b/1e9, "") }

// fmtShare renders a fraction as a percentage ("79.6 %"); "" for NaN.
func fmtShare(x float64) string { return fixed1(100*x, " %") }

// fixed1 renders x with one decimal and the suffix; "" for NaN or Inf.
func fixed1(x float64, suffix string) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + suffix
}

// sig renders x with three significant digits, without exponent for the
// magnitudes a table holds.
func sig(x float64) string { return units.FormatSig(x) }

// commas renders n with thousands separators.
func commas(n int64) string { return units.Commas(n) }

// fmtRatio renders a/b as "3.9×"; "" when it cannot exist.
func fmtRatio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return ""
	}
	return sig(a/b) + "×"
}

// fmtRange renders the p10–p90 spread.
func fmtRange(lo, hi float64, f func(float64) string) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return ""
	}
	return f(lo) + " – " + f(hi)
}

// fmtTokens renders a prefix length as it is usually written (8k).
func fmtTokens(n int64) string { return units.FormatTokens(n) }

// fmtBytes renders a payload size with an IEC unit.
func fmtBytes(n float64) string { return units.FormatBytes(n) }

func fmtPct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return fmt.Sprintf("%+.1f %%", x)
}

// paragraph writes text as a Markdown paragraph: its line, then a blank one.
func paragraph(w io.Writer, text string) {
	fmt.Fprintln(w, text)
	fmt.Fprintln(w)
}
