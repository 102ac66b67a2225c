package analysis

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/results"
)

// A Run is the content of one results directory.
type Run struct {
	Dir      string
	Manifest *results.Manifest // nil when the directory has no manifest.json
	// Files holds the rows of every file of a registered suite found in
	// the directory, by file name.
	Files    map[string][]results.Row
	Tokens   []Token  // MB1's per-token series, when present
	Figures  []Figure // the plots drawn into DIR/plots, from its index
	Warnings []string // e.g. a manifest that could not be read
}

// Rows returns the rows of the main file of the suite called name, nil
// when the run has none.
func (r *Run) Rows(name string) []results.Row {
	s, ok := results.LookupSuite(name)
	if !ok {
		return nil
	}
	return r.Files[s.Main().Name]
}

// A Token is one decoded token of an MB1 cell: when it arrived, relative
// to the start of the cell, and the prefill window of that cell.
type Token struct {
	Arm         string
	Endpoint    string
	D, P        int
	Rep         int
	Stream      int
	Index       int
	T           float64 // seconds since the cell started
	Inject      float64 // when the prefill was sent
	PrefillDone float64 // when its first token came back
}

// ErrNoResults is returned by Load for a directory holding none of
// kvtier's CSV files.
var ErrNoResults = errors.New("no kvtier CSV")

// Load reads every kvtier file in dir. A file that is absent is left
// empty; one that exists but cannot be read or parsed is an error. A
// directory with none of the files is ErrNoResults.
func Load(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, UnwrapPath(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	r := &Run{Dir: dir, Files: map[string][]results.Row{}}
	var names []string
	for _, suite := range results.Suites() {
		for _, f := range suite.Files {
			names = append(names, f.Name)
			if err := r.readRows(f.Name); err != nil {
				return nil, err
			}
		}
	}
	if len(r.Files) == 0 {
		return nil, fmt.Errorf("%s: %w (%s)", dir, ErrNoResults, strings.Join(names, ", "))
	}
	if err := r.loadTokens(); err != nil {
		return nil, err
	}
	r.loadFigures()
	mpath := filepath.Join(dir, "manifest.json")
	if _, err := os.Stat(mpath); err == nil {
		m, err := results.ReadManifest(mpath)
		if err != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("manifest.json unreadable: %v", err))
		} else {
			r.Manifest = m
		}
	} else {
		r.Warnings = append(r.Warnings, "no manifest.json: environment unknown")
	}
	return r, nil
}

// readRows reads a CSV of the run into r.Files; a file that does not
// exist is left out. Lines that are not rows are left out and said in
// r.Warnings; a file that cannot be read or is corrupt is an error
// naming it.
func (r *Run) readRows(name string) error {
	path := filepath.Join(r.Dir, name)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	t, err := results.ReadTable(path)
	if err != nil {
		return err // it names the file
	}
	if len(t.Rows) == 0 && len(t.Malformed) > 0 {
		return fmt.Errorf("%s: corrupt: no line is a row (%s)", path, t.Problems())
	}
	if p := t.Problems(); p != "" {
		r.Warnings = append(r.Warnings, p)
	}
	r.Files[name] = t.Rows
	return nil
}

// tokensFile is MB1's per-token series: the raw file whose rows are
// tokens, by stream and index within their stream.
func tokensFile() string {
	for _, s := range results.Suites() {
		for _, f := range s.Files {
			if names := f.Names(); f.Raw && slices.Contains(names, results.ColStream) && slices.Contains(names, results.ColIndex) {
				return f.Name
			}
		}
	}
	return ""
}

// loadTokens turns MB1's per-token rows into Tokens. A malformed count
// is an error, not a 0 that would file the token under another stream
// or cell.
func (r *Run) loadTokens() error {
	name := tokensFile()
	rows := r.Files[name]
	r.Tokens = make([]Token, 0, len(rows))
	for i, x := range rows {
		var ints [4]int
		for j, col := range []string{results.ColDecodeStreams, results.ColPrefillTokens, results.ColStream, results.ColIndex} {
			n, err := strconv.Atoi(x.Get(col))
			if err != nil {
				return fmt.Errorf("%s: row %d: %s %q is not an integer", filepath.Join(r.Dir, name), i+2, col, x.Get(col))
			}
			ints[j] = n
		}
		r.Tokens = append(r.Tokens, Token{
			Arm: x.Get(results.ColArm), Endpoint: x.Get(results.ColEndpoint), D: ints[0], P: ints[1], Rep: x.Rep,
			Stream: ints[2], Index: ints[3], T: x.Float(results.ColTime), Inject: x.Float(results.ColInject),
			PrefillDone: x.Float(results.ColPrefillDone),
		})
	}
	return nil
}

// Atoi is the integer in a CSV cell, 0 where it holds none.
func Atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// UnwrapPath drops the "open PATH:" layer of a PathError so that messages
// name the file once.
func UnwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// FileWith returns the rows of the file of the named suite that has
// column col: how a reader tells a suite's raw files apart without
// importing the package that declares them.
func (r *Run) FileWith(suite, col string) []results.Row {
	s, ok := results.LookupSuite(suite)
	if !ok {
		return nil
	}
	for _, f := range s.Files {
		if slices.Contains(f.Names(), col) {
			return r.Files[f.Name]
		}
	}
	return nil
}
