package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
)

// reportOptions are the flags and arguments of kvtier report.
type reportOptions struct {
	Dirs []string
	HTML bool // also write REPORT.html beside it
}

// Validate reports every problem with the options at once.
func (o reportOptions) Validate() error {
	var errs []error
	if len(o.Dirs) == 0 {
		errs = append(errs, errors.New("need at least one results directory (kvtier report DIR...)"))
	}
	return errors.Join(errs...)
}

// writeFile writes b to path whole or not at all (results.WriteBytes).
func writeFile(path string, b []byte) error {
	if err := results.WriteBytes(path, b); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// runReport writes REPORT.md for one or more results directories and
// prints it.
func runReport(ctx context.Context, c *cli.Call) int {
	fs := c.FlagSet()
	var (
		o      reportOptions
		outDir string
		all    bool
	)
	fs.StringVarP(&outDir, "out", "o", "", "directory to write REPORT.md into (default the first DIR; a name ending in .md, the file itself, is deprecated)")
	fs.MarkShorthandDeprecated("out", "use --out, as every command does")
	fs.BoolVar(&all, "print", false, "print the whole report to stdout, not only its headline")
	fs.BoolVar(&o.HTML, "html", false, "also write the report as one self-contained HTML page (inline SVG figures, no network) beside --out, named like it with .html")
	if code, ok := c.ParseFlags(fs); !ok {
		return code
	}
	o.Dirs = fs.Args()
	if err := o.Validate(); err != nil {
		return c.UsageErr(err)
	}
	out, err := reportPath(c.Stderr, outDir, o.Dirs[0])
	if err != nil {
		return c.UsageErr(option.Wrap("out", err))
	}
	runs, err := loadReportRuns(c.Stderr, o.Dirs)
	if err != nil {
		return c.UsageErr(err)
	}
	ro := report.Options{Base: filepath.Dir(out), Home: c.Getenv("HOME")}
	var buf bytes.Buffer
	report.Markdown(&buf, runs, ro)
	if err := writeFile(out, buf.Bytes()); err != nil {
		c.Logf("%v", err)
		return cli.ExitFail
	}
	c.Logf("wrote %s", out)
	if err := printReport(c.Stdout, buf.Bytes(), all); err != nil {
		return cli.ExitFail
	}
	if o.HTML {
		return writeHTML(c.Stderr, runs, ro, strings.TrimSuffix(out, filepath.Ext(out))+".html")
	}
	return cli.ExitOK
}

// loadReportRuns loads the results directories of a report. With
// several (make bench passes one per suite), one that holds no CSV, a
// suite that could not start, is said and left out; a file that cannot be
// read is still an error.
func loadReportRuns(stderr io.Writer, dirs []string) ([]*analysis.Run, error) {
	var runs []*analysis.Run
	var empty []error
	for _, d := range dirs {
		r, err := analysis.Load(d)
		switch {
		case err == nil:
			runs = append(runs, r)
		case errors.Is(err, analysis.ErrNoResults) && len(dirs) > 1:
			empty = append(empty, err)
		default:
			return nil, err
		}
	}
	if len(runs) == 0 {
		return nil, errors.Join(empty...)
	}
	for _, err := range empty {
		fmt.Fprintf(stderr, "kvtier report: warning: %v; left out\n", err)
	}
	return runs, nil
}

// reportPath returns where REPORT.md goes: into the directory out, or
// the file out (deprecated: a name ending in .md, the old meaning of
// --out), or into first.
func reportPath(stderr io.Writer, out, first string) (string, error) {
	switch {
	case out == "":
		return filepath.Join(first, "REPORT.md"), nil // checked by loading it
	case strings.HasSuffix(out, ".md"):
		if err := cli.CheckFileDir(out); err != nil {
			return "", err
		}
		fmt.Fprintf(stderr, "kvtier report: --out %s: a file is deprecated; give a directory (REPORT.md is written into it)\n", out)
		return out, nil
	}
	if err := cli.CheckOutDir(out); err != nil {
		return "", err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(out, "REPORT.md"), nil
}

// printReport writes the report md to w: all of it, or its headline.
func printReport(w io.Writer, md []byte, all bool) error {
	if !all {
		md = headline(md)
	}
	_, err := w.Write(md)
	return err
}

// headline returns the report's headline section, from its "## Headline"
// heading to the next section.
func headline(md []byte) []byte {
	s := string(md)
	i := strings.Index(s, "## Headline\n")
	if i < 0 {
		return nil
	}
	s = s[i:]
	if j := strings.Index(s[len("## Headline\n"):], "\n## "); j >= 0 {
		s = s[:len("## Headline\n")+j+1]
	}
	return []byte(s)
}

// writeHTML writes the report as one HTML page to path.
func writeHTML(stderr io.Writer, runs []*analysis.Run, ro report.Options, path string) int {
	var buf bytes.Buffer
	if err := report.HTML(&buf, runs, ro); err != nil {
		fmt.Fprintf(stderr, "kvtier report: %v\n", err)
		return cli.ExitFail
	}
	if err := writeFile(path, buf.Bytes()); err != nil {
		fmt.Fprintf(stderr, "kvtier report: --html: %v\n", err)
		return cli.ExitFail
	}
	fmt.Fprintf(stderr, "kvtier report: wrote %s\n", path)
	return cli.ExitOK
}

// loadRuns reads every directory, failing on the first that is not a
// kvtier results directory or cannot be read.
func loadRuns(dirs []string) ([]*analysis.Run, error) {
	var runs []*analysis.Run
	for _, d := range dirs {
		r, err := analysis.Load(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

func init() {
	cli.Register(&cli.Command{Name: "report", Order: 150, Run: runReport,
		Env:     []cli.EnvVar{{Name: "HOME", Meaning: "the home directory, written as ~ in the report (a report is shared)", Secret: true}},
		Summary: "REPORT.md: tables, tier cost model, break-even prefixes",
		Usage:   "Usage: kvtier report [--out DIR] [--html] DIR...\n\nWrites REPORT.md (the headline, the environment once, each suite's tables,\nthe tier cost model, break-even prefixes, predicted vs measured TTFT and an\nindex of the figures) from kvtier results directories, says where, and prints\nits headline (--print: all of it); with --html also one self-contained\nREPORT.html beside it, figures inline."})
}
