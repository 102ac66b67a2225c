package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/kvtier/kvtier/report"
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
	return bench2csv(os.Stdin, stdout, stderr, args)
}

func bench2csv(stdin io.Reader, stdout, stderr io.Writer, args []string) int {
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
	in, name := stdin, "stdin"
	if o.In != "-" {
		f, err := os.Open(o.In)
		if err != nil {
			return usageErr(stderr, "bench2csv", err)
		}
		defer f.Close()
		in, name = f, o.In
	}
	rows, warns, err := report.ParseBenchDefaults(in, name,
		map[string]string{"backend": o.Backend, "transport": o.Transport, "model": o.Model})
	for _, w := range warns {
		fmt.Fprintf(stderr, "kvtier bench2csv: warning: %s\n", w)
	}
	if err != nil {
		return usageErr(stderr, "bench2csv", err)
	}
	var buf bytes.Buffer
	if err := report.WriteRowsCSV(&buf, report.SweepHeader(), rows); err != nil {
		return usageErr(stderr, "bench2csv", err)
	}
	if o.Out == "" {
		if _, err := stdout.Write(buf.Bytes()); err != nil {
			return exitFail
		}
		return exitOK
	}
	if err := os.WriteFile(o.Out, buf.Bytes(), 0o644); err != nil {
		return usageErr(stderr, "bench2csv", fmt.Errorf("--out: %w", err))
	}
	fmt.Fprintf(stderr, "kvtier bench2csv: %d rows to %s\n", len(rows), o.Out)
	return exitOK
}
