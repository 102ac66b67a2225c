package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kvtier/kvtier/plots"
)

// plotOptions are the arguments of kvtier plot.
type plotOptions struct {
	Dirs []string
}

// Validate reports every problem with the options at once.
func (o plotOptions) Validate() error {
	if len(o.Dirs) == 0 {
		return errors.New("need at least one results directory (kvtier plot DIR...)")
	}
	return nil
}

// runPlot draws every plot the CSV files of each directory allow into
// DIR/plots/, PNG and SVG.
func runPlot(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("plot", "usage: kvtier plot [--verbose] DIR...\n\nDraws the plots (PNG and SVG) of every suite found in each results\ndirectory into DIR/plots/ and prints their paths; says why a figure of a\nsuite that ran was not drawn.", stderr)
	verbose := fs.BoolP("verbose", "v", false, "also name the suites that did not run in a directory (nothing to draw)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	o := plotOptions{Dirs: fs.Args()}
	if err := o.Validate(); err != nil {
		return usageErr(stderr, "plot", err)
	}
	for _, d := range o.Dirs {
		res, err := plots.Draw(d)
		if errors.Is(err, plots.ErrDraw) {
			fmt.Fprintf(stderr, "kvtier plot: %s: %v\n", d, err)
			return exitFail
		}
		if err != nil {
			return usageErr(stderr, "plot", err)
		}
		for _, f := range res.Files {
			fmt.Fprintln(stdout, f)
		}
		for _, m := range res.Absent {
			fmt.Fprintf(stderr, "kvtier plot: %s: %s\n", d, m)
		}
		if *verbose {
			for _, f := range res.NotRun {
				fmt.Fprintf(stderr, "kvtier plot: %s: %s absent (suite not run): its plots not drawn\n", d, f)
			}
		}
	}
	return exitOK
}
