package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// quickSweep is a sweep of four configurations on the host backend:
// host (blockwise, percopy) and recompute, at two prefixes.
var quickSweep = []string{"sweep", "--backend", "host", "--tiers", "host,recompute", "--layout", "blockwise", "--copy", "percopy",
	"--model-config", "testdata/tiny_config.json", "--prefix", "16,32", "--reps", "2", "--warmup", "1"}

var progressLine = regexp.MustCompile(`^kvtier sweep: \[(\d)/4\] .* \(.*elapsed(, ETA .*)?\)$`)

// TestProgressOffTerminal: off a terminal, a run says where it is in one
// line per configuration, [i/N] with the elapsed time and an ETA (none on
// the last: nothing is left), in words that are never "warning" or
// "error"; --quiet silences it and the rows' lines, leaving the messages.
// Before, no line said [i/N], elapsed or ETA, and there was no --quiet.
func TestProgressOffTerminal(t *testing.T) {
	_, stderr := mustRunCLI(t, append(quickSweep, "--out", filepath.Join(t.TempDir(), "run"))...)
	var seen []string
	for _, l := range strings.Split(stderr, "\n") {
		if m := progressLine.FindStringSubmatch(l); m != nil && !strings.Contains(l, "waiting for") {
			seen = append(seen, m[1])
			if last := m[1] == "4"; last != (m[2] == "") {
				t.Errorf("progress line [%s/4] has ETA %q, want one on every line but the last", m[1], m[2])
			}
			if forbiddenWords.MatchString(l) {
				t.Errorf("progress line uses a message's word: %q", l)
			}
		}
	}
	if strings.Join(seen, ",") != "1,2,3,4" {
		t.Errorf("progress lines [i/4] for i = %v, want 1,2,3,4:\n%s", seen, stderr)
	}
	_, quiet := mustRunCLI(t, append(quickSweep, "--quiet", "--out", filepath.Join(t.TempDir(), "run"))...)
	if strings.Contains(quiet, "[1/4]") || strings.Contains(quiet, "p50") || !strings.Contains(quiet, "kvtier sweep: wrote") {
		t.Errorf("--quiet:\n%s", quiet)
	}
}

var forbiddenWords = regexp.MustCompile(`(?i)warning|error`)

// openPTY opens a pseudo-terminal: the side a program writes to (a
// terminal to it) and the side that reads what it wrote.
func openPTY(t *testing.T) (term, reader *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open pts: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return s, m
}

// onTerminal runs kvtier args with stderr on a pseudo-terminal and
// returns its exit status and what it wrote there.
func onTerminal(t *testing.T, args ...string) (int, string) {
	t.Helper()
	term, reader := openPTY(t)
	got := make(chan string)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, reader) // until the terminal side closes (EIO)
		got <- b.String()
	}()
	var stdout bytes.Buffer
	code := dispatch(context.Background(), &stdout, term, args)
	term.Close()
	return code, strings.ReplaceAll(<-got, "\r\n", "\n") // the terminal's own newline
}

// TestProgressOnTerminal: on a terminal the progress is one line redrawn
// in place, cleared before every message so that the final lines stand
// alone; bad input is still one line, the progress never started.
func TestProgressOnTerminal(t *testing.T) {
	code, out := onTerminal(t, append(quickSweep, "--out", filepath.Join(t.TempDir(), "run"))...)
	if code != exitOK {
		t.Fatalf("exit %d:\n%q", code, out)
	}
	if !strings.Contains(out, "\r") || !strings.Contains(out, "[4/4]") || !strings.Contains(out, "\x1b[K") {
		t.Errorf("no status line redrawn in place:\n%q", out)
	}
	last := out[strings.LastIndex(out, "kvtier sweep: wrote"):]
	if strings.ContainsAny(last, "\r\x1b") || strings.Contains(last, "ETA") {
		t.Errorf("the final lines are mixed with the status line: %q", last)
	}
	code, out = onTerminal(t, "sweep", "--backend", "host", "--reps", "0", "--out", filepath.Join(t.TempDir(), "bad"))
	if code != exitUsage || strings.Count(out, "\n") != 1 || strings.ContainsAny(out, "\x1b") || strings.Contains(out, "ETA") {
		t.Errorf("bad input on a terminal: exit %d, %q: want exit 2 and one line", code, out)
	}
}
