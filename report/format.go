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

// A Table is a Markdown table with footnotes. Columns whose cells are all
// numbers (or dashes) are right-aligned.
type Table struct {
	header []string
	rows   [][]string
	notes  []string // footnote texts; note i is marked "[i+1]"
	// Hoist moves a column whose cell is the same in every row (of two
	// or more) out of the table into one line above it: a label said
	// once, not in every row.
	Hoist bool
	// Inline writes the footnotes on one line (the headline's tables).
	Inline bool
}

// NewTable returns an empty table under header that hoists the
// columns all its rows share.
func NewTable(header ...string) *Table { return &Table{header: header, Hoist: true} }

// numeric reports whether column i holds numbers only.
func (t *Table) numeric(i int) bool {
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

// Add adds a row; an empty or NaN cell becomes Dash (the caller adds
// the note saying why).
func (t *Table) Add(cells ...string) {
	for i, c := range cells {
		if c == "" || strings.Contains(c, "NaN") || strings.Contains(c, "Inf") {
			cells[i] = Dash // never an empty or NaN cell; callers add a note
		}
	}
	t.rows = append(t.rows, cells)
}

// Note returns the marker of footnote text, adding it once.
func (t *Table) Note(text string) string {
	for i, n := range t.notes {
		if n == text {
			return fmt.Sprintf("[%d]", i+1)
		}
	}
	t.notes = append(t.notes, text)
	return fmt.Sprintf("[%d]", len(t.notes))
}

// Dash returns Dash marked with footnote text.
func (t *Table) Dash(text string) string { return Dash + " " + t.Note(text) }

// constant returns the columns whose cell is the same in every row, when
// hoisting applies, and the others.
func (t *Table) constant() (same, keep []int) {
	for i := range t.header {
		one := t.Hoist && t.Len() >= 2
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

// Write writes the table, its hoisted columns in a line above it and
// its footnotes below.
func (t *Table) Write(w io.Writer) {
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
func (t *Table) writeNotes(w io.Writer) {
	if len(t.notes) == 0 {
		return
	}
	fmt.Fprintln(w)
	if t.Inline {
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

// Len returns the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// String returns the table as Write writes it.
func (t *Table) String() string {
	var b strings.Builder
	t.Write(&b)
	return b.String()
}

// FmtSec renders seconds with three significant digits in the unit
// that suits them; "" for NaN so the table marks it.
func FmtSec(s float64) string { return units.FormatSeconds(s) }

// FmtMS renders seconds as milliseconds, the unit of the MB1 table.
func FmtMS(s float64) string {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return ""
	}
	return Sig(s * 1e3)
}

// FmtGB renders bytes as decimal gigabytes with one decimal, the unit of
// the reference's capacity table; "" for NaN.
func FmtGB(b float64) string { return fixed1(b/1e9, "") }

// FmtShare renders a fraction as a percentage ("79.6 %"); "" for NaN
// and for a fraction below 0 or above 1 (an impossible figure, from a
// server or a corrupt CSV): no report shows a share above 100 %.
func FmtShare(x float64) string {
	const slack = 1e-9 // a share of 1 computed with rounding
	if x < -slack || x > 1+slack {
		return ""
	}
	return fixed1(100*min(max(x, 0), 1), " %")
}

// fixed1 renders x with one decimal and the suffix; "" for NaN or Inf.
func fixed1(x float64, suffix string) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + suffix
}

// Sig renders x with three significant digits, without exponent for the
// magnitudes a table holds.
func Sig(x float64) string { return units.FormatSig(x) }

// Commas renders n with thousands separators.
func Commas(n int64) string { return units.Commas(n) }

// FmtRatio renders a/b as "3.9×"; "" when it cannot exist.
func FmtRatio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return ""
	}
	return Sig(a/b) + "×"
}

// FmtRange renders the p10–p90 spread.
func FmtRange(lo, hi float64, f func(float64) string) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return ""
	}
	return f(lo) + " – " + f(hi)
}

// FmtTokens renders a prefix length as it is usually written (8k).
func FmtTokens(n int64) string { return units.FormatTokens(n) }

// FmtBytes renders a payload size with an IEC unit.
func FmtBytes(n float64) string { return units.FormatBytes(n) }

// FmtPct renders a signed percentage ("+4.2 %"); "" for NaN or Inf.
func FmtPct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return fmt.Sprintf("%+.1f %%", x)
}

// Paragraph writes text as a Markdown paragraph: its line, then a blank one.
func Paragraph(w io.Writer, text string) {
	fmt.Fprintln(w, text)
	fmt.Fprintln(w)
}

// FitAlpha is a fit's α cell: a negative fixed cost is a fit problem,
// not a cost, so the cell is a dash that says so; other problems (a poor
// R²) are noted beside α.
func FitAlpha(t *Table, alpha float64, problems string) string {
	switch {
	case strings.Contains(problems, "negative fixed cost"):
		return t.Dash("fit problem: " + problems)
	case problems != "":
		return FmtSec(alpha) + " " + t.Note("fit problem: "+problems)
	}
	return FmtSec(alpha)
}
