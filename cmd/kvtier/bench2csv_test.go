package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cli"
)

// endlessBench is benchmark output that goes on until limit bytes: the
// same result line again and again (a `go test -bench -count` with no
// end, piped into bench2csv -).
type endlessBench struct {
	read, limit int
}

func (e *endlessBench) Read(p []byte) (int, error) {
	if e.read >= e.limit {
		return 0, io.EOF
	}
	const line = "BenchmarkTiers/tier=host/layout=blockwise/prefix=16-2 \t 1 \t 1000 ns/op\n"
	n := 0
	for n+len(line) <= len(p) && e.read < e.limit {
		n += copy(p[n:], line)
		e.read += len(line)
	}
	return n, nil
}

// firstWrite records how much of the input had been read when the first
// CSV bytes came out.
type firstWrite struct {
	in    *endlessBench
	at    int
	lines int
	stop  func()
	after int
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.at < 0 {
		w.at = w.in.read
	}
	w.lines += bytes.Count(p, []byte("\n"))
	if w.stop != nil && w.lines >= w.after {
		w.stop()
	}
	return len(p), nil
}

// bench2csv converts a stream as it reads it: its first rows come out
// long before the input ends, and Ctrl-C ends an endless stream with
// what was converted kept. Before, every row was held in memory until
// the end of the input: an endless stream crashed it out of memory.
func TestBench2CSVStreams(t *testing.T) {
	t.Parallel()
	in := &endlessBench{limit: 32 << 20}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &firstWrite{in: in, at: -1, stop: cancel, after: 20000}
	var stderr strings.Builder
	code := bench2csv(ctx, in, out, &stderr, []string{"--backend", "host", "-"})
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d (interrupted): %s", code, exitInterrupted, stderr.String())
	}
	if out.at < 0 || out.at > 4<<20 {
		t.Errorf("first CSV bytes after %d input bytes, want them within the first 4 MiB of a 32 MiB stream", out.at)
	}
	if in.read >= in.limit {
		t.Error("the whole stream was read before the interrupt took effect")
	}
	if out.lines < 20000 {
		t.Errorf("%d lines written, want at least 20000", out.lines)
	}
}

// A line past benchfmt's limit is bad input named as such, one line,
// exit 2; the rows before it are kept.
func TestBench2CSVLongLine(t *testing.T) {
	t.Parallel()
	in := "BenchmarkTiers/tier=host/prefix=16-2 1 1000 ns/op\n" + strings.Repeat("x", 100<<10) + "\n"
	var stdout, stderr strings.Builder
	code := bench2csv(context.Background(), strings.NewReader(in), &stdout, &stderr, []string{"--backend", "host"})
	if code != exitUsage || !strings.Contains(stderr.String(), "longer than 64 KiB") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want 2 and one line naming the long line", code, stderr.String())
	}
	if got := strings.Count(stdout.String(), "\n"); got != 2 {
		t.Errorf("stdout has %d lines, want the header and the row read before the long line", got)
	}
}

// bench2csv runs kvtier bench2csv args reading stdin.
func bench2csv(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args []string) int {
	c, _ := cli.Lookup("bench2csv")
	return c.Run(ctx, &cli.Call{Command: c, Args: args, Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv})
}
