package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/harness/transfer"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/gobench"
	"github.com/kvtier/kvtier/units"
)

// bench2csvOptions are the flags and arguments of kvtier bench2csv.
type bench2csvOptions struct {
	In        string // file or "-" for stdin
	Out       string // results directory, a file (deprecated: a name ending in .csv) or "" for stdout
	Backend   string // backend column where the input does not say
	Transport string
	Model     string
}

// Validate reports every problem with the options at once.
func (o bench2csvOptions) Validate() error {
	if o.In == "" {
		return errors.New("empty input name (use - for stdin)")
	}
	return nil
}

// runBench2CSV turns `go test -bench` output into sweep.csv-shaped rows.
func runBench2CSV(ctx context.Context, c *cli.Call) int {
	fs := c.FlagSet()
	o := bench2csvOptions{In: "-"}
	fs.StringVarP(&o.Out, "out", "o", "", "results directory to write sweep.csv and transfer.csv into (created; a name ending in .csv, one file, is deprecated)")
	fs.MarkShorthandDeprecated("out", "use --out, as every command does")
	fs.StringVar(&o.Backend, "backend", "", "backend column (host, cuda) where the names and config lines do not say")
	fs.StringVar(&o.Transport, "transport", "", "transport column where the names and config lines do not say")
	fs.StringVar(&o.Model, "model", "", "model column where the names and config lines do not say")
	if code, ok := c.ParseFlags(fs); !ok {
		return code
	}
	switch a := fs.Args(); len(a) {
	case 0:
	case 1:
		o.In = a[0]
	default:
		return c.UsageErr(fmt.Errorf("want one input, got %d", len(a)))
	}
	if err := o.Validate(); err != nil {
		return c.UsageErr(err)
	}
	if strings.HasSuffix(o.Out, ".csv") {
		if err := cli.CheckFileDir(o.Out); err != nil {
			return c.UsageErr(option.Wrap("out", err))
		}
		c.Logf("--out %s: a file is deprecated; give a directory (sweep.csv and transfer.csv are written into it)", o.Out)
	} else if o.Out != "" {
		if err := cli.CheckOutDir(o.Out); err != nil {
			return c.UsageErr(option.Wrap("out", err))
		}
	}
	in, name := c.Stdin, "stdin"
	if o.In != "-" {
		f, err := os.Open(o.In)
		if err != nil {
			return c.UsageErr(err)
		}
		defer f.Close()
		in, name = f, o.In
	}
	defaults := map[string]string{"backend": o.Backend, "transport": o.Transport, "model": o.Model}
	return convertBench(ctx, in, name, defaults, o.Out, c.Stdout, c.Stderr)
}

// A writeError is a failure to write the CSV, as opposed to bad input.
type writeError struct{ error }

func (e writeError) Unwrap() error { return e.error }

// convertBench converts the benchmark output in as it reads it: to
// stdout row by row, into the file out (deprecated: a name ending in
// .csv), or into the directory out as sweep.csv and transfer.csv, each
// whole or not at all. Nothing but a repetition count per benchmark name
// is kept, so an endless stream is converted in bounded memory.
func convertBench(ctx context.Context, in io.Reader, name string, defaults map[string]string, out string, stdout, stderr io.Writer) int {
	var counts map[string]int
	var warns []string
	var err error
	switch {
	case out == "":
		counts, warns, err = convertOne(ctx, in, name, defaults, stdout)
	case strings.HasSuffix(out, ".csv"):
		err = results.WriteFile(out, func(w io.Writer) error {
			var err error
			counts, warns, err = convertOne(ctx, in, name, defaults, w)
			return err
		})
	default:
		counts, warns, err = convertDir(ctx, in, name, defaults, out)
	}
	for _, w := range warns {
		fmt.Fprintf(stderr, "kvtier bench2csv: warning: %s\n", w)
	}
	var werr writeError
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "kvtier bench2csv: interrupted")
		return cli.ExitInterrupted
	case errors.As(err, &werr):
		fmt.Fprintf(stderr, "kvtier bench2csv: writing %s: %v\n", cmp.Or(out, "stdout"), werr.error)
		return cli.ExitFail
	case err != nil:
		return cli.UsageErr(stderr, "bench2csv", err)
	}
	for _, f := range slices.Sorted(maps.Keys(counts)) {
		if out != "" {
			fmt.Fprintf(stderr, "kvtier bench2csv: %s to %s\n", units.Count(counts[f], "row", "rows"), cmp.Or(f, out))
		}
	}
	return cli.ExitOK
}

// convertOne writes the rows of one file, the sweep's, to w; a row of
// another file (BenchmarkTransfer's) needs --out DIR.
func convertOne(ctx context.Context, in io.Reader, name string, defaults map[string]string, w io.Writer) (map[string]int, []string, error) {
	var rw *gobench.RowWriter
	n := 0
	warns, err := gobench.ScanFiles(in, name, defaults, func(f results.File, r results.Row) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if f.Name != sweep.File {
			return option.Errorf("out", "the input holds rows of %s: give --out DIR", f.Name)
		}
		if rw == nil {
			var err error
			if rw, err = gobench.NewRowWriter(w, gobench.SweepHeader()); err != nil {
				return writeError{err}
			}
		}
		n++
		return writeRow(rw, r)
	})
	if rw == nil {
		return nil, warns, err
	}
	if ferr := rw.Flush(); ferr != nil && err == nil {
		err = writeError{ferr}
	}
	return map[string]int{"": n}, warns, err
}

// convertDir writes sweep.csv and transfer.csv into dir, each whole or not
// at all; a file no row went into is not left behind.
func convertDir(ctx context.Context, in io.Reader, name string, defaults map[string]string, dir string) (map[string]int, []string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, option.Wrap("out", err)
	}
	counts := map[string]int{}
	var warns []string
	sweepPath, transferPath := filepath.Join(dir, sweep.File), filepath.Join(dir, transfer.File)
	err := results.WriteFile(sweepPath, func(ws io.Writer) error {
		return results.WriteFile(transferPath, func(wt io.Writer) error {
			writers := map[string]*gobench.RowWriter{}
			outs := map[string]io.Writer{sweep.File: ws, transfer.File: wt}
			var err error
			warns, err = gobench.ScanFiles(in, name, defaults, func(f results.File, r results.Row) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				rw := writers[f.Name]
				if rw == nil {
					var err error
					if rw, err = gobench.NewRowWriter(outs[f.Name], f.Header()); err != nil {
						return writeError{err}
					}
					writers[f.Name] = rw
				}
				counts[filepath.Join(dir, f.Name)]++
				return writeRow(rw, r)
			})
			for _, rw := range writers {
				if ferr := rw.Flush(); ferr != nil && err == nil {
					err = writeError{ferr}
				}
			}
			return err
		})
	})
	for _, p := range []string{sweepPath, transferPath} {
		if counts[p] == 0 && err == nil {
			os.Remove(p)
		}
	}
	return counts, warns, err
}

// writeRow writes r, a failure being a writeError.
func writeRow(rw *gobench.RowWriter, r results.Row) error {
	if err := rw.Write(r); err != nil {
		return writeError{err}
	}
	return nil
}

func init() {
	cli.Register(&cli.Command{Name: "bench2csv", Order: 170, Run: runBench2CSV,
		Summary: "turn `go test -bench` output into kvtier rows",
		Usage:   "Usage: kvtier bench2csv [--out DIR] [FILE|-]\n\nTurns `go test -bench ./bench` output into kvtier results (suite \"bench\"):\nBenchmarkTiers into DIR/sweep.csv, BenchmarkTransfer into DIR/transfer.csv,\nwhich kvtier report, plot and compare read as a sweep's and a transfer's.\nkey=value parts of the names and the configuration lines the benchmarks\nprint (backend:, model:, path:, ...) become columns; sec/op becomes the\nseconds column and MB/s gb_per_s (GB/s, 10^9 bytes). Without --out the\nsweep's CSV goes to stdout."})
}
