package gobench

import (
	"bufio"
	"io"
	"math"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/kvtier/kvtier/results"
)

// SkipPrefix starts the line a benchmark of ./bench prints for a
// configuration it skips, whatever -v says: "--- SKIP: NAME: REASON".
// benchstat ignores it; Scan turns it into a status=skipped row with the
// reason, so a report from `go test -bench` says what was not measured
// and why, as one from kvtier sweep does. go test's own -v line
// ("--- SKIP: NAME", the reason on the next line) has no ": " after the
// name and is left alone.
const SkipPrefix = "--- SKIP: "

// A skip is one configuration a benchmark skipped, with the run
// configuration lines in effect when it was said.
type skip struct {
	name, reason string
	config       []benchfmt.Config
}

// skipTap passes its input through to the benchmark reader unchanged,
// noting the skip lines and the run configuration lines as they go by.
// It looks at whole lines only (a line longer than the buffer passes
// unread, as benchfmt then fails on it).
type skipTap struct {
	br      *bufio.Reader
	rest    []byte
	err     error
	atStart bool
	config  map[string]string
	skips   []skip
}

func newSkipTap(r io.Reader) *skipTap {
	return &skipTap{br: bufio.NewReaderSize(r, 64<<10), atStart: true, config: map[string]string{}}
}

func (t *skipTap) Read(p []byte) (int, error) {
	if len(t.rest) == 0 && t.err == nil {
		line, err := t.br.ReadSlice('\n')
		if t.atStart && (err == nil || err == io.EOF) {
			t.inspect(strings.TrimRight(string(line), "\r\n"))
		}
		t.atStart = err == nil
		t.rest = append(t.rest[:0], line...)
		if err != nil && err != bufio.ErrBufferFull {
			t.err = err
		}
	}
	n := copy(p, t.rest)
	t.rest = t.rest[n:]
	if len(t.rest) == 0 && t.err != nil {
		return n, t.err
	}
	return n, nil
}

// runKeys are the configuration lines a skip row takes: the run's,
// not a measured configuration's (path, device, ... of the one before).
var runKeys = []string{"backend", "model", "block_tokens", "block_bytes"}

// inspect notes a skip line, or a run configuration line.
func (t *skipTap) inspect(line string) {
	if rest, ok := strings.CutPrefix(line, SkipPrefix); ok {
		if name, reason, ok := strings.Cut(rest, ": "); ok && strings.HasPrefix(name, "Benchmark") && !strings.Contains(name, " ") {
			var cfg []benchfmt.Config
			for _, k := range runKeys {
				if v := t.config[k]; v != "" {
					cfg = append(cfg, benchfmt.Config{Key: k, Value: []byte(v), File: true})
				}
			}
			t.skips = append(t.skips, skip{name, strings.TrimSpace(reason), cfg})
		}
		return
	}
	k, v, ok := strings.Cut(line, ": ")
	if ok && k != "" && !strings.ContainsAny(k, " \t") && k[0] >= 'a' && k[0] <= 'z' {
		t.config[k] = strings.TrimSpace(v)
	}
}

// take returns the skips noted since the last call.
func (t *skipTap) take() []skip {
	s := t.skips
	t.skips = nil
	return s
}

// skipRow is the status=skipped row of s in file's columns, or nil with
// why it was dropped.
func skipRow(s skip, defaults map[string]string, file results.File) (*results.Row, []string) {
	res := &benchfmt.Result{Name: benchfmt.Name(s.name), Config: s.config, Iters: 1,
		Values: []benchfmt.Value{{Value: 0, Unit: "sec/op"}}}
	row, warns := benchRow(res, defaults, file)
	if row == nil {
		return nil, warns
	}
	row.Status, row.Reason = results.StatusSkipped, s.reason
	row.Seconds, row.GBps = math.NaN(), math.NaN()
	delete(row.Extra, results.ColFLOPS)
	delete(row.Extra, results.ColTFLOPS)
	return row, warns
}
