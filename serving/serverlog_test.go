package serving

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Lines as Ollama writes them with OLLAMA_DEBUG=1 (the text handler of
// log/slog; v0.6.8's llama.cpp runner and v0.9.6's own engine log the
// same message and keys).
const (
	ollamaStart = `time=2026-01-01T00:00:00.000Z level=INFO source=server.go:410 msg="starting llama server" cmd="/bin/ollama runner --model /m --ctx-size 16384 --batch-size 512 --verbose --threads 1 --no-mmap --parallel 2 --port 35921"`
	ollamaMiss  = `time=2026-01-01T00:00:01.000Z level=DEBUG source=cache.go:104 msg="loading cache slot" id=0 cache=0 prompt=4001 used=0 remaining=4001`
	ollamaHit   = `time=2026-01-01T00:00:02.000Z level=DEBUG source=cache.go:136 msg="loading cache slot" id=1 cache=4002 prompt=4001 used=4000 remaining=1`
	ollamaOther = `time=2026-01-01T00:00:03.000Z level=DEBUG source=cache.go:104 msg="loading cache slot" id=0 cache=0 prompt=17 used=0 remaining=17`
)

func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		f.WriteString(l + "\n")
	}
}

// The log's cache lines count a request's cached tokens: only lines
// written since Mark, matched by prompt length, each claimed once; a
// line still being written waits; what was there before Mark is no
// request's.
func TestServerLogClaim(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ollama.log")
	appendLines(t, path, ollamaStart, ollamaMiss)
	l, err := OpenServerLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := l.Slots(); s.N != 2 || !strings.Contains(s.Source, "--parallel 2") {
		t.Errorf("slots %+v, want 2 from --parallel", s)
	}
	if n, why := l.Claim(4001); why == "" {
		t.Errorf("a line from before the mark counted: %d", n)
	}
	appendLines(t, path, ollamaOther, ollamaHit, `msg="loading cache slot" prompt=40`) // the last one unfinished
	for _, tt := range []struct {
		prompt, want int
		why          string
	}{
		{4001, 4000, ""},
		{17, 0, ""},
		{4001, 0, "no cache line of a 4001-token prompt"},
		{40, 0, "no cache line"},
	} {
		if n, why := l.Claim(tt.prompt); n != tt.want || !strings.Contains(why, tt.why) || (why == "") != (tt.why == "") {
			t.Errorf("claim %d: %d %q, want %d %q", tt.prompt, n, why, tt.want, tt.why)
		}
	}
	l.Mark()
	appendLines(t, path, ollamaHit, strings.Replace(ollamaHit, "used=4000 remaining=1", "used=0 remaining=4001", 1))
	if _, why := l.Claim(4001); !strings.Contains(why, "disagree") {
		t.Errorf("two lines of one length with different counts: %q, want them refused", why)
	}
	if _, err := OpenServerLog(filepath.Join(t.TempDir(), "none.log")); err == nil {
		t.Error("a log that is not there opened")
	}
}

// A server log that is no regular file is refused at once: opening a
// FIFO nobody writes to waited forever, past the signal that asked
// kvtier to stop.
func TestServerLogNotRegular(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "log")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	for _, path := range []string{fifo, "/dev/zero", t.TempDir()} {
		if _, err := OpenServerLog(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("OpenServerLog(%s): %v", path, err)
		}
	}
}
