// Package harness runs kvtier's experiments: the tier sweep (this
// package), the MB2 transfer sweep, and through its subpackages the HTTP
// TTFT probe (probe), MB1 interference (mb1) and the simulated vLLM server
// (sim). It owns timing, warm-up, verification and the results directory.
package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
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
}

// CreateOutput makes dir (and parents) and writes a first manifest.json
// with the machine's facts, collected as sys says (root of sysfs/procfs
// reads, native libraries). It fails, writing nothing, when dir cannot be
// created or written.
func CreateOutput(dir, suite string, command []string, sys system.Config, log io.Writer) (*Output, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--out %s: %w", dir, err)
	}
	probe := filepath.Join(dir, ".kvtier-write-test")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		return nil, fmt.Errorf("--out %s: not writable: %w", dir, err)
	}
	os.Remove(probe)
	m := &results.Manifest{
		Tool:    "kvtier",
		Version: Version(),
		Command: slices.Clone(command),
		Suite:   suite,
		Start:   time.Now().UTC(),
	}
	for _, err := range system.Collect(sys, m) {
		m.Warnings = append(m.Warnings, err.Error())
		if log != nil {
			fmt.Fprintf(log, "kvtier: warning: %v\n", err)
		}
	}
	o := &Output{Dir: dir, Manifest: m, summary: map[string][]string{}}
	return o, o.WriteManifest()
}

// CSV creates name in the directory with the common columns and extra.
// keys are the columns a summary groups by; nil means no summary.
func (o *Output) CSV(name string, keys []string, extra ...string) (*results.CSV, error) {
	return o.csv(name, append(slices.Clone(results.CommonColumns), extra...), keys)
}

// Open creates the suite file f in the directory with the header its
// declaration gives; when f has summary keys, Close writes its summary
// beside it.
func (o *Output) Open(f results.File) (*results.CSV, error) {
	keys := f.Keys
	if f.Raw {
		keys = nil
	}
	return o.csv(f.Name, f.Header(), keys)
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

// RawCSV creates name with exactly the given columns (for files that are
// not sample rows, such as token time series) and no summary.
func (o *Output) RawCSV(name string, columns []string) (*results.CSV, error) {
	return o.csv(name, columns, nil)
}

func (o *Output) csv(name string, columns, keys []string) (*results.CSV, error) {
	s, err := results.OpenCSV(filepath.Join(o.Dir, name), columns)
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
		out := strings.TrimSuffix(s.Path(), ".csv") + "_summary.csv"
		if err := results.SummarizeFile(s.Path(), out, keys); err != nil {
			errs = append(errs, err)
			continue
		}
		o.AddFile(out)
	}
	o.Manifest.End = time.Now().UTC()
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

// Version returns kvtier's VCS revision as the Go toolchain stamped it,
// else the revision set at link time, else "unknown".
func Version() string {
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
