package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/report"
)

// compareOptions are the arguments of kvtier compare.
type compareOptions struct {
	Old, New string
}

// Validate reports every problem with the options at once.
func (o compareOptions) Validate() error {
	var errs []error
	if o.Old == "" || o.New == "" {
		errs = append(errs, errors.New("need two results directories (kvtier compare OLD NEW)"))
	}
	return errors.Join(errs...)
}

// runCompare prints the change in p50 of every configuration between two
// runs with a Mann-Whitney U test, as benchstat does. It exits 0 whatever
// changed.
func runCompare(ctx context.Context, c *cli.Call) int {
	fs := c.FlagSet()
	if code, ok := c.ParseFlags(fs); !ok {
		return code
	}
	var o compareOptions
	switch a := fs.Args(); len(a) {
	case 2:
		o.Old, o.New = a[0], a[1]
	case 0, 1:
	default:
		return c.UsageErr(fmt.Errorf("want two directories, got %d", len(a)))
	}
	if err := o.Validate(); err != nil {
		return c.UsageErr(err)
	}
	runs, err := loadRuns([]string{o.Old, o.New})
	if err != nil {
		return c.UsageErr(err)
	}
	for i, r := range runs {
		for _, w := range r.Warnings {
			c.Logf("%s: %s", []string{o.Old, o.New}[i], w)
		}
	}
	report.WriteComparison(c.Stdout, o.Old, o.New, report.Compare(runs[0], runs[1]))
	return cli.ExitOK
}

func init() {
	cli.Register(&cli.Command{Name: "compare", Order: 160, Run: runCompare,
		Summary: "change in p50 between two runs, with a significance test",
		Usage:   "Usage: kvtier compare OLD NEW\n\nChange in p50 per configuration between two results directories\n(sweep time, probe TTFT, transfer time, MB1 penalty), with a Mann-Whitney\nU test at alpha 0.05; \"~\" marks no significant change."})
}
