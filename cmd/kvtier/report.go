package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kvtier/kvtier/report"
)

// reportOptions are the flags and arguments of kvtier report.
type reportOptions struct {
	Dirs []string
	Out  string // REPORT.md path; default DIR/REPORT.md of the first DIR
}

// Validate reports every problem with the options at once.
func (o reportOptions) Validate() error {
	var errs []error
	if len(o.Dirs) == 0 {
		errs = append(errs, errors.New("need at least one results directory (kvtier report DIR...)"))
	}
	return errors.Join(errs...)
}

// runReport writes REPORT.md for one or more results directories and
// prints it.
func runReport(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("report", "usage: kvtier report [--out FILE] DIR...\n\nWrites REPORT.md (tables, tier cost model, break-even prefixes,\npredicted vs measured TTFT) from kvtier results directories and prints it.", stderr)
	var o reportOptions
	fs.StringVarP(&o.Out, "out", "o", "", "where to write the report (default DIR/REPORT.md of the first DIR)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	o.Dirs = fs.Args()
	if err := o.Validate(); err != nil {
		return usageErr(stderr, "report", err)
	}
	// With several directories (make bench passes one per suite), one
	// that holds no CSV, a suite that could not start, is said and left
	// out; a file that cannot be read is still an error.
	var runs []*report.Run
	var empty []error
	for _, d := range o.Dirs {
		r, err := report.Load(d)
		switch {
		case err == nil:
			runs = append(runs, r)
		case errors.Is(err, report.ErrNoResults) && len(o.Dirs) > 1:
			empty = append(empty, err)
		default:
			return usageErr(stderr, "report", err)
		}
	}
	if len(runs) == 0 {
		return usageErr(stderr, "report", errors.Join(empty...))
	}
	for _, err := range empty {
		fmt.Fprintf(stderr, "kvtier report: warning: %v; left out\n", err)
	}
	var buf bytes.Buffer
	report.Write(&buf, runs)
	out := o.Out
	if out == "" {
		out = filepath.Join(o.Dirs[0], "REPORT.md")
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return usageErr(stderr, "report", fmt.Errorf("--out: %w", err))
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return exitFail
	}
	fmt.Fprintf(stderr, "kvtier report: wrote %s\n", out)
	return exitOK
}

// loadRuns reads every directory, failing on the first that is not a
// kvtier results directory or cannot be read.
func loadRuns(dirs []string) ([]*report.Run, error) {
	var runs []*report.Run
	for _, d := range dirs {
		r, err := report.Load(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}
