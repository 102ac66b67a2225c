// Package report turns kvtier results directories into tables and models:
// REPORT.md with the environment, the device tier table, the HTTP
// four-tier TTFT table, the MB1 and MB2 tables, a fitted cost model per
// tier with break-even prefixes against recompute, predicted versus
// measured TTFT, run comparison with a significance test, and the
// conversion of `go test -bench` output into kvtier rows.
//
// Everything here reads the CSV files and manifest.json alone; it imports
// nothing from the measuring side of kvtier. Skipped and error rows are
// counted with their reasons and never turned into numbers.
package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kvtier/kvtier/results"
)

// A Run is the content of one results directory.
type Run struct {
	Dir      string
	Manifest *results.Manifest // nil when the directory has no manifest.json
	Sweep    []results.Row     // sweep.csv
	Transfer []results.Row     // transfer.csv
	Probe    []results.Row     // probe.csv
	MB1      []results.Row     // mb1.csv
	Tokens   []Token           // mb1_tokens.csv
	// Trace and plan files: trace.csv, trace_curve.csv,
	// trace_windows.csv, plan.csv, plan_costs.csv.
	Trace, TraceCurve, TraceWindows []results.Row
	Plan, PlanCosts                 []results.Row
	Warnings                        []string // e.g. a manifest that could not be read
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

// Suites lists the sample files a directory may hold, in report order.
var Suites = []string{results.SweepFile, results.ProbeFile, results.MB1File, results.TransferFile}

// ErrNoResults is returned by Load for a directory holding none of
// kvtier's CSV files.
var ErrNoResults = errors.New("no kvtier CSV")

// Load reads every kvtier file in dir. A file that is absent is left
// empty; one that exists but cannot be read or parsed is an error. A
// directory with none of the files is ErrNoResults.
func Load(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, unwrapPath(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	r := &Run{Dir: dir}
	found := 0
	for _, f := range []struct {
		name string
		dst  *[]results.Row
	}{
		{results.SweepFile, &r.Sweep},
		{results.TransferFile, &r.Transfer},
		{results.ProbeFile, &r.Probe},
		{results.MB1File, &r.MB1},
		{results.TraceFile, &r.Trace},
		{results.TraceCurveFile, &r.TraceCurve},
		{results.TraceWindowsFile, &r.TraceWindows},
		{results.PlanFile, &r.Plan},
		{results.PlanCostsFile, &r.PlanCosts},
	} {
		rows, ok, err := readRows(filepath.Join(dir, f.name))
		if err != nil {
			return nil, err
		}
		if ok {
			found++
			*f.dst = rows
		}
	}
	toks, ok, err := readTokens(filepath.Join(dir, results.MB1TokensFile))
	if err != nil {
		return nil, err
	}
	if ok {
		found++
		r.Tokens = toks
	}
	if found == 0 {
		return nil, fmt.Errorf("%s: %w (%s, %s, %s, %s, %s, %s or %s)", dir, ErrNoResults,
			results.SweepFile, results.ProbeFile, results.MB1File, results.TransferFile, results.MB1TokensFile,
			results.TraceFile, results.PlanFile)
	}
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

// readRows reads a sample CSV; ok is false when the file does not exist.
func readRows(path string) (rows []results.Row, ok bool, err error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	rows, _, err = results.ReadCSV(path)
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	return rows, true, nil
}

// readTokens reads mb1_tokens.csv; ok is false when it does not exist.
func readTokens(path string) ([]Token, bool, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	defer f.Close()
	rows, _, err := results.ParseCSV(f, path)
	if err != nil {
		return nil, true, err
	}
	out := make([]Token, 0, len(rows))
	for i, r := range rows {
		// ParseCSV puts the common-named columns (suite, rep) in fields
		// and the rest in Extra. A malformed count is an error, not a 0
		// that would file the token under another stream or cell.
		var ints [4]int
		for j, col := range []string{"decode_streams", "prefill_tokens", "stream", "index"} {
			n, err := strconv.Atoi(r.Get(col))
			if err != nil {
				return nil, true, fmt.Errorf("%s: row %d: %s %q is not an integer", path, i+2, col, r.Get(col))
			}
			ints[j] = n
		}
		t := Token{
			Arm:         r.Get("arm"),
			Endpoint:    r.Get("endpoint"),
			D:           ints[0],
			P:           ints[1],
			Rep:         r.Rep,
			Stream:      ints[2],
			Index:       ints[3],
			T:           r.Float("t_s"),
			Inject:      r.Float("inject_s"),
			PrefillDone: r.Float("prefill_done_s"),
		}
		out = append(out, t)
	}
	return out, true, nil
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// unwrapPath drops the "open PATH:" layer of a PathError so that messages
// name the file once.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
