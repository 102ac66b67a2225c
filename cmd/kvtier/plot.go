package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvtier/kvtier/cli"
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
func runPlot(ctx context.Context, c *cli.Call) int {
	fs := c.FlagSet()
	verbose := fs.BoolP("verbose", "v", false, "also name the suites that did not run in a directory (nothing to draw)")
	if code, ok := c.ParseFlags(fs); !ok {
		return code
	}
	o := plotOptions{Dirs: fs.Args()}
	if err := o.Validate(); err != nil {
		return c.UsageErr(err)
	}
	for _, d := range o.Dirs {
		res, err := plots.Draw(d)
		if errors.Is(err, plots.ErrDraw) {
			c.Logf("%s: %v", d, err)
			return cli.ExitFail
		}
		if err != nil {
			return c.UsageErr(err)
		}
		for _, f := range res.Files {
			fmt.Fprintln(c.Stdout, f)
		}
		for _, m := range res.Absent {
			c.Logf("%s: %s", d, m)
		}
		if *verbose {
			for _, f := range res.NotRun {
				c.Logf("%s: %s absent (suite not run): its plots not drawn", d, f)
			}
		}
	}
	return cli.ExitOK
}

func init() {
	cli.Register(&cli.Command{Name: "plot", Order: 140, Run: runPlot,
		Summary: "plots (PNG and SVG) of every suite in a results directory",
		Usage:   "Usage: kvtier plot [--verbose] DIR...\n\nDraws the plots (PNG and SVG) of every suite found in each results\ndirectory into DIR/plots/ and prints their paths; says why a figure of a\nsuite that ran was not drawn."})
}
