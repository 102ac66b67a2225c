package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/results"
)

// bench2csvOptions are the flags and arguments of kvtier bench2csv.
type bench2csvOptions struct {
	In        string // file or "-" for stdin
	Out       string // file or "" for stdout
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
func runBench2CSV(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	return bench2csv(ctx, os.Stdin, stdout, stderr, args)
}

func bench2csv(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args []string) int {
	fs := newFlagSet("bench2csv", "usage: kvtier bench2csv [--out FILE] [FILE|-]\n\nTurns `go test -bench` output into sweep.csv rows (suite \"bench\"):\nkey=value parts of sub-benchmark names become columns, sec/op seconds,\nMB/s gbps.", stderr)
	o := bench2csvOptions{In: "-"}
	fs.StringVarP(&o.Out, "out", "o", "", "write the CSV here instead of stdout")
	fs.StringVar(&o.Backend, "backend", "", "backend column (host, cuda) where the names and config lines do not say")
	fs.StringVar(&o.Transport, "transport", "", "transport column where the names and config lines do not say")
	fs.StringVar(&o.Model, "model", "", "model column where the names and config lines do not say")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	switch a := fs.Args(); len(a) {
	case 0:
	case 1:
		o.In = a[0]
	default:
		return usageErr(stderr, "bench2csv", fmt.Errorf("want one input, got %d", len(a)))
	}
	if err := o.Validate(); err != nil {
		return usageErr(stderr, "bench2csv", err)
	}
	if o.Out != "" {
		if err := checkFileDir(o.Out); err != nil {
			return usageErr(stderr, "bench2csv", option.Wrap("out", err))
		}
	}
	in, name := stdin, "stdin"
	if o.In != "-" {
		f, err := os.Open(o.In)
		if err != nil {
			return usageErr(stderr, "bench2csv", err)
		}
		defer f.Close()
		in, name = f, o.In
	}
	defaults := map[string]string{"backend": o.Backend, "transport": o.Transport, "model": o.Model}
	return convertBench(ctx, in, name, defaults, o.Out, stdout, stderr)
}

// A writeError is a failure to write the CSV, as opposed to bad input.
type writeError struct{ error }

func (e writeError) Unwrap() error { return e.error }

// convertBench converts the benchmark output in as it reads it: to
// stdout row by row, or into out whole or not at all. Nothing but a
// repetition count per benchmark name is kept, so an endless stream is
// converted in bounded memory.
func convertBench(ctx context.Context, in io.Reader, name string, defaults map[string]string, out string, stdout, stderr io.Writer) int {
	rows := 0
	var warns []string
	convert := func(w io.Writer) error {
		rw, err := report.NewRowWriter(w, report.SweepHeader())
		if err != nil {
			return writeError{err}
		}
		var serr error
		warns, serr = report.ScanBench(in, name, defaults, func(r results.Row) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := rw.Write(r); err != nil {
				return writeError{err}
			}
			rows++
			return nil
		})
		if err := rw.Flush(); err != nil && serr == nil {
			serr = writeError{err}
		}
		return serr
	}
	var err error
	if out == "" {
		err = convert(stdout)
	} else {
		err = results.WriteFile(out, convert)
	}
	for _, w := range warns {
		fmt.Fprintf(stderr, "kvtier bench2csv: warning: %s\n", w)
	}
	var werr writeError
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "kvtier bench2csv: interrupted")
		return exitInterrupted
	case errors.As(err, &werr):
		fmt.Fprintf(stderr, "kvtier bench2csv: writing %s: %v\n", cmp.Or(out, "stdout"), werr.error)
		return exitFail
	case err != nil:
		return usageErr(stderr, "bench2csv", err)
	}
	if out != "" {
		fmt.Fprintf(stderr, "kvtier bench2csv: %d rows to %s\n", rows, out)
	}
	return exitOK
}
