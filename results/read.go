package results

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/kvtier/kvtier/internal/regfile"
)

// MaxFileBytes bounds a results CSV a reader loads: far beyond any run's,
// so that a device or a runaway file cannot exhaust memory.
const MaxFileBytes = 4 << 30

// A Table is what a reader found in a kvtier CSV file.
type Table struct {
	Name   string // the file's name, for messages
	Header []string
	// Schema declares Header's columns as the suite that writes the
	// file does (a column it does not know: text).
	Schema []Column
	Rows   []Row
	// CutShort is true when the last line is incomplete, as a run killed
	// while writing leaves it: that line is left out, which is expected.
	CutShort bool
	// Malformed are the lines before the last that are not rows of the
	// file (wrong field count, a stray quote, a value that does not
	// parse): each is left out and counted, never taken for the end.
	Malformed []LineError
	// twins are the indices of a legacy column and of today's name of
	// it, where the header has both: a row whose two disagree is
	// malformed.
	twins [][2]int
}

// A LineError is a line of a file that is not a row of it.
type LineError struct {
	Line int
	Err  error
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// ErrCorrupt is matched by errors.Is for a file that is not a kvtier CSV
// at all: no header, or a header without the columns every file has.
var ErrCorrupt = errors.New("corrupt")

// Problems describes what a reader left out, "" when nothing was: the
// malformed lines (the first few by number) and a cut-short last line.
func (t *Table) Problems() string {
	var msg string
	if n := len(t.Malformed); n > 0 {
		msg = fmt.Sprintf("%s: %d malformed line(s) left out", t.Name, n)
		for i, e := range t.Malformed {
			if i == 3 {
				msg += ", ..."
				break
			}
			msg += "; " + e.Error()
		}
	}
	if t.CutShort {
		if msg != "" {
			msg += "; "
		}
		msg += t.Name + ": last line cut short (an interrupted run), left out"
	}
	return msg
}

// LegacyColumns maps the names columns had before their unit was in
// their name to today's: results written by older kvtier read as new.
// gbps held GB/s (10^9 B/s), which NIC users read as Gb/s; line_gbps and
// link_gbps held GB/s too.
var LegacyColumns = map[string]string{
	"gbps": "gb_per_s", "gbps_p50": "gb_per_s_p50", "gbps_p10": "gb_per_s_p10", "gbps_p90": "gb_per_s_p90",
	"line_gbps": "line_gb_per_s", "link_gbps": "link_gb_per_s",
	"gbps_mean": "gb_per_s_mean", "gbps_stddev": "gb_per_s_stddev", "gbps_min": "gb_per_s_min",
	"gbps_p99": "gb_per_s_p99", "gbps_max": "gb_per_s_max",
}

// ReadCSV reads every row of a kvtier CSV file. A cut-short last line is
// left out silently; malformed lines in the middle are an error that
// names them (use ReadTable to keep the rows and count them instead).
func ReadCSV(path string) ([]Row, []string, error) {
	t, err := ReadTable(path)
	if err != nil {
		return nil, nil, err
	}
	if len(t.Malformed) > 0 {
		return t.Rows, t.Header, errors.New(t.Problems())
	}
	return t.Rows, t.Header, nil
}

// ReadTable reads a kvtier CSV file. It fails only for a file that
// cannot be read or is corrupt (errors.Is(err, ErrCorrupt)); lines that
// are not rows are left out and listed in the Table.
func ReadTable(path string) (*Table, error) {
	data, err := readFile(path, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	return ParseTable(data, path)
}

// readFile reads a results file at most limit bytes long; one that is
// not a regular file or is longer is corrupt (ErrCorrupt).
func readFile(path string, limit int64) ([]byte, error) {
	b, err := regfile.Read(path, limit)
	if errors.Is(err, regfile.ErrNotRegular) || errors.Is(err, regfile.ErrTooLarge) {
		return nil, fmt.Errorf("results: %w: %w", err, ErrCorrupt)
	}
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return b, nil
}

// ParseTable parses the bytes of a kvtier CSV file; name is used in
// messages. See ReadTable.
func ParseTable(data []byte, name string) (*Table, error) {
	t := &Table{Name: name}
	p := &parser{t: t, data: data, line: 1}
	hdr, err := p.next()
	if err == nil {
		err = checkHeader(hdr)
	}
	if err != nil {
		return nil, fmt.Errorf("results: %s: no CSV header (%v): %w", name, err, ErrCorrupt)
	}
	t.Header = slices.Clone(hdr)
	for i, c := range t.Header {
		n, ok := LegacyColumns[c]
		if j := slices.Index(hdr, n); ok && j < 0 {
			t.Header[i] = n
		} else if ok {
			t.twins = append(t.twins, [2]int{i, j})
		}
	}
	t.Schema = declared(name, t.Header)
	for {
		rec, err := p.next()
		if err == io.EOF {
			return t, nil
		}
		line := p.recLine
		if err == nil {
			err = t.add(rec)
		}
		if err != nil {
			if p.atEnd() && !bytes.HasSuffix(data, []byte("\n")) {
				t.CutShort = true
				return t, nil
			}
			t.Malformed = append(t.Malformed, LineError{line, err})
		}
	}
}

// checkHeader says what makes hdr no header: an empty or unprintable
// column name, or one listed twice.
func checkHeader(hdr []string) error {
	seen := map[string]bool{}
	for _, c := range hdr {
		if c == "" || strings.IndexFunc(c, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			return fmt.Errorf("column %q", c)
		}
		if seen[c] {
			return fmt.Errorf("column %q twice", c)
		}
		seen[c] = true
	}
	return nil
}

// add turns one record into a row of the table.
func (t *Table) add(rec []string) error {
	if len(rec) != len(t.Header) {
		return fmt.Errorf("%d fields, the header has %d", len(rec), len(t.Header))
	}
	for _, tw := range t.twins {
		if old, now := rec[tw[0]], rec[tw[1]]; old != "" && now != "" && !sameFigure(old, now) {
			return fmt.Errorf("%s %s and %s %s disagree (%s is the old name of %s: one of them was edited)",
				t.Header[tw[0]], old, t.Header[tw[1]], now, t.Header[tw[0]], t.Header[tw[1]])
		}
	}
	row := Row{Extra: map[string]string{}}
	for i, c := range t.Header {
		// An integer written in float form by an older kvtier reads
		// as the integer it is.
		if err := row.SetCell(c, t.Schema[i].Format(rec[i])); err != nil {
			return err
		}
	}
	t.Rows = append(t.Rows, row)
	return nil
}

// sameFigure reports whether two cells hold the same figure: equal
// text, or numbers within a millionth of each other (as written at
// different precisions).
func sameFigure(a, b string) bool {
	x, errx := strconv.ParseFloat(a, 64)
	y, erry := strconv.ParseFloat(b, 64)
	if errx != nil || erry != nil {
		return a == b
	}
	return math.Abs(x-y) <= 1e-6*max(math.Abs(x), math.Abs(y))
}

// declared returns the declarations of header's columns in the file
// called name (a registered suite file's name, or one ending in "-" and
// such a name, as bench and VM checks write them); columns the file's
// suite does not declare are as Schema says.
func declared(name string, header []string) []Column {
	out := Schema(header)
	base := filepath.Base(name)
	for _, s := range Suites() {
		for _, f := range s.Files {
			if base != f.Name && !strings.HasSuffix(base, "-"+f.Name) {
				continue
			}
			for i, c := range header {
				if d, ok := f.Column(c); ok {
					out[i] = d
				}
			}
			return out
		}
	}
	return out
}

// A parser reads CSV records and recovers from a malformed one by
// starting again at the line after the one it began on, so one stray
// quote cannot swallow the rest of the file.
type parser struct {
	t       *Table
	data    []byte // what is left to parse
	line    int    // line number of data[0]
	r       *csv.Reader
	recLine int // line the last record began on
}

func (p *parser) next() ([]string, error) {
	if p.r == nil {
		p.r = csv.NewReader(bytes.NewReader(p.data))
		p.r.FieldsPerRecord = -1
	}
	rec, err := p.r.Read()
	if err == nil {
		l, _ := p.r.FieldPos(0)
		p.recLine = p.line + l - 1
		return rec, nil
	}
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return nil, err
	}
	// Skip the line the bad record began on and read on from the next.
	p.recLine = p.line + pe.StartLine - 1
	skip := pe.StartLine
	off := 0
	for i := 0; i < skip && off < len(p.data); i++ {
		j := bytes.IndexByte(p.data[off:], '\n')
		if j < 0 {
			off = len(p.data)
			break
		}
		off += j + 1
	}
	p.data, p.line, p.r = p.data[off:], p.line+skip, nil
	return nil, fmt.Errorf("%v", pe.Err)
}

// atEnd reports whether nothing but the last record is left.
func (p *parser) atEnd() bool {
	rest := p.data
	if p.r != nil {
		rest = rest[p.r.InputOffset():]
	}
	return len(bytes.TrimSpace(rest)) == 0
}
