// Package harness holds what every suite measures with: the Sampler (the
// one timing loop: warm-up, reps, budget, which reps are verified, the
// timing label, the memory-fit rule, progress) and the Output (a results
// directory: its CSV files, their summaries and manifest.json). Each suite
// is a package below it — sweep, transfer (MB2), probe, mb1, trace, replay,
// knee, mesh — that declares its results.Suite once.
package harness

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/results"
)

// An Output is a results directory being written: sample CSVs, their
// summaries, and manifest.json. Create it before measuring and Close it
// when done, also after an interruption.
type Output struct {
	Dir      string
	Manifest *results.Manifest

	mu      sync.Mutex
	sinks   []*results.CSV
	summary map[string][]string // CSV path -> key columns for its summary
	// closedErrors counts the error rows of sinks already closed.
	closedErrors int
	created      bool     // Create made the directory
	parents      []string // the directory's parents Create made, deepest first
}

// An OutDir says where a run writes its results directory and what it
// may do with what is there.
type OutDir struct {
	Path string
	// Unique makes the directory a fresh one: when Path exists, "-2",
	// "-3", ... is appended until a name is free, so that runs started in
	// the same second each get their own (the default --out).
	Unique bool
	// Overwrite allows a directory that already holds results; the files
	// this run writes replace theirs. Without it such a directory is
	// refused, so that no run's rows are lost to another's.
	Overwrite bool
}

// ErrHasResults is matched by errors.Is when a directory already holds
// a run's results.
var ErrHasResults = errors.New("already holds results")

// A Collector adds the machine's facts (host, GPUs, NICs, libraries) to
// a manifest and returns what it could not find out. The collectors that
// query NVML and CUDA need cgo; cmd passes them in (system.Collector), so
// the measuring core builds without it. A nil Collector adds nothing.
type Collector func(m *results.Manifest) []error

// CreateOutput is Create of OutDir{Path: dir}.
func CreateOutput(dir, suite string, command []string, collect Collector, log io.Writer) (*Output, error) {
	return Create(OutDir{Path: dir}, suite, command, collect, log)
}

// Create makes the results directory d says (and its parents) and writes
// a first manifest.json with the machine's facts. It fails, writing
// nothing, when the directory cannot be created or written or already
// holds results it may not replace. collect adds the machine's facts to
// the manifest; what it could not find out becomes the manifest's
// warnings.
func Create(d OutDir, suite string, command []string, collect Collector, log io.Writer) (*Output, error) {
	parents := missingParents(d.Path)
	dir, created, err := makeDir(d)
	if err != nil {
		removeEmpty(parents)
		return nil, err
	}
	probe := filepath.Join(dir, ".kvtier-write-test")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		if created {
			os.Remove(dir)
		}
		removeEmpty(parents)
		return nil, fmt.Errorf("%s: not writable: %w", dir, err)
	}
	os.Remove(probe)
	m := NewManifest(suite, command, collect, log)
	o := &Output{Dir: dir, Manifest: m, summary: map[string][]string{}, created: created, parents: parents}
	if err := o.WriteManifest(); err != nil {
		o.Remove()
		return nil, err
	}
	return o, nil
}

// NewManifest returns the first manifest of a run of suite started by
// command: kvtier's version, the command line (secrets redacted), the
// start time and the machine's facts, which collect adds; what it could
// not find out becomes the manifest's warnings, each also said on log
// (nil: not said).
func NewManifest(suite string, command []string, collect Collector, log io.Writer) *results.Manifest {
	m := &results.Manifest{
		Tool: "kvtier", Version: Version(), Command: redact.Args(command), Suite: suite, Start: time.Now().UTC(), // the manifest's wall-clock stamp
	}
	var errs []error
	if collect != nil {
		errs = collect(m)
	}
	for _, err := range errs {
		m.Warnings = append(m.Warnings, err.Error())
		if log != nil {
			fmt.Fprintf(log, "kvtier: warning: %v\n", err)
		}
	}
	return m
}

// makeDir creates the directory of d, returning its path and whether
// this call created it.
func makeDir(d OutDir) (string, bool, error) {
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(d.Path)), 0o755); err != nil {
		return "", false, err
	}
	path := d.Path
	for i := 2; ; i++ {
		err := os.Mkdir(path, 0o755)
		switch {
		case err == nil:
			return path, true, nil
		case !errors.Is(err, fs.ErrExist):
			return "", false, err
		case d.Unique && i < 1000:
			path = fmt.Sprintf("%s-%d", d.Path, i)
			continue
		}
		if held := HeldResults(path); held != "" && !d.Overwrite {
			return "", false, fmt.Errorf("%s %w (%s): give another directory, or allow replacing them", path, ErrHasResults, held)
		}
		return path, false, nil
	}
}

// HeldResults names a file of a run's results in dir ("" when none):
// its manifest.json or a CSV.
func HeldResults(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
		return "manifest.json"
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.csv")); len(m) > 0 {
		return filepath.Base(m[0])
	}
	return ""
}

// Remove deletes what the output wrote (a run refused at start leaves
// nothing behind), and the directory itself when Create made it.
func (o *Output) Remove() error {
	o.mu.Lock()
	sinks := o.sinks
	o.sinks = nil
	o.mu.Unlock()
	for _, s := range sinks {
		s.Close()
	}
	var errs []error
	for _, f := range append(slices.Clone(o.Manifest.Files), "manifest.json") {
		if err := os.Remove(filepath.Join(o.Dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if o.created {
		errs = append(errs, os.Remove(o.Dir))
		removeEmpty(o.parents)
	}
	return errors.Join(errs...)
}

// missingParents returns the parents of path that do not exist yet,
// deepest first: what creating path would make.
func missingParents(path string) []string {
	var out []string
	for p := filepath.Dir(filepath.Clean(path)); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return out
		}
		out = append(out, p)
		if filepath.Dir(p) == p {
			return out
		}
	}
}

// removeEmpty removes each of dirs, deepest first, while they are empty.
func removeEmpty(dirs []string) {
	for _, d := range dirs {
		if os.Remove(d) != nil {
			return
		}
	}
}

// Open creates the suite file f in the directory with the header its
// declaration gives; when f has summary keys, Close writes its summary
// beside it.
func (o *Output) Open(f results.File) (*results.CSV, error) {
	keys := f.Keys
	if f.Raw {
		keys = nil
	}
	return o.csv(f.Name, f.Schema(), keys)
}

// OpenAll opens each of files in turn (Open), for a suite that writes all
// of its files: its CSVs in the order of files.
func (o *Output) OpenAll(files []results.File) ([]*results.CSV, error) {
	out := make([]*results.CSV, len(files))
	for i, f := range files {
		c, err := o.Open(f)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// Errors returns the number of error rows written through the output's
// CSV files: a run with any is not a clean run (exit status 1).
func (o *Output) Errors() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.closedErrors
	for _, s := range o.sinks {
		n += s.Errors()
	}
	return n
}

// Rows returns the number of rows written through the output's open CSV
// files.
func (o *Output) Rows() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, s := range o.sinks {
		n += s.Rows()
	}
	return n
}

func (o *Output) csv(name string, columns []results.Column, keys []string) (*results.CSV, error) {
	s, err := results.OpenSchema(filepath.Join(o.Dir, name), columns)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sinks = append(o.sinks, s)
	o.Manifest.Files = append(o.Manifest.Files, name)
	if keys != nil {
		o.summary[s.Path()] = keys
	}
	return s, nil
}

// AddFile records a file the run wrote (a plot, a report) in the manifest.
func (o *Output) AddFile(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if rel, err := filepath.Rel(o.Dir, name); err == nil && !strings.HasPrefix(rel, "..") {
		name = rel
	}
	if !slices.Contains(o.Manifest.Files, name) {
		o.Manifest.Files = append(o.Manifest.Files, name)
	}
}

// Refused wraps err as the reason a run refused to start after its
// results directory was created (before any row): the run lifecycle
// removes the directory and reports bad input.
func Refused(err error) error { return &refusedError{err} }

// IsRefused reports whether err says the run refused to start.
func IsRefused(err error) bool {
	var r *refusedError
	return errors.As(err, &r)
}

type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// WriteManifest rewrites manifest.json with the current state.
func (o *Output) WriteManifest() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return results.WriteManifest(filepath.Join(o.Dir, "manifest.json"), o.Manifest)
}

// Close closes every CSV, writes a summary CSV beside each sample CSV that
// has summary keys (name_summary.csv), stamps the end time and rewrites
// the manifest. interrupted records a run cut short by a signal or an
// error; what was measured is kept either way.
func (o *Output) Close(interrupted bool) error {
	o.mu.Lock()
	var errs []error
	for _, s := range o.sinks {
		o.closedErrors += s.Errors()
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	sinks := o.sinks
	o.sinks = nil
	o.mu.Unlock()
	for _, s := range sinks {
		keys, ok := o.summary[s.Path()]
		if !ok {
			continue
		}
		out := results.SummaryPath(s.Path())
		if err := results.SummarizeFile(s.Path(), out, keys); err != nil {
			errs = append(errs, err)
			continue
		}
		o.AddFile(out)
	}
	o.Manifest.End = time.Now().UTC() // the manifest's wall-clock stamp
	o.Manifest.Interrupted = interrupted
	if err := o.WriteManifest(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// revision is kvtier's git revision as the build stamped it with
// -ldflags "-X github.com/kvtier/kvtier/harness.revision=$(git rev-parse HEAD)",
// for builds where the toolchain's VCS stamping is off (GOFLAGS=-buildvcs=false).
var revision string

// Version says which kvtier this is, the same wherever a binary reports
// it (--version, kvtier info, every manifest and so every report): the
// module version the build recorded (a tag; a pseudo-version such as
// v0.0.0-20261201195234-5e640eda1d81 for `go install ...@latest`, which
// holds the revision; "(devel)" for a build from a clone), then the VCS
// revision where the toolchain or make build stamped one and the module
// version does not already hold it.
func Version() string {
	mod := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		mod = bi.Main.Version
	}
	if rev := Revision(); rev != "unknown" && !strings.Contains(mod, shortRev(rev)) {
		return mod + " revision " + rev
	}
	return mod
}

// shortRev is the 12-character prefix of a revision a pseudo-version
// carries.
func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// Revision returns kvtier's VCS revision as the Go toolchain stamped it,
// else the revision set at link time, else "unknown".
func Revision() string {
	bi, ok := debug.ReadBuildInfo()
	rev, dirty := "", false
	if ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if rev == "" {
		if revision != "" {
			return revision
		}
		return "unknown"
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
