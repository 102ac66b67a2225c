package serving

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// A ServerLog is a serving engine's log file, read for what its HTTP API
// does not say: the prompt tokens each request reused from the prefix
// cache, and how many sequences the server runs at once. Today it reads
// Ollama's (docs/servers.md): with OLLAMA_DEBUG=1 its runner logs, as
// each request takes a cache slot (runner/llamarunner/cache.go in
// v0.6.8, runner/ollamarunner/cache.go in the new engine of v0.9.6),
//
//	msg="loading cache slot" id=0 cache=4001 prompt=4001 used=4000 remaining=1
//
// used being the prompt tokens taken from the cache (a whole prompt
// reused still evaluates its last token), and the server logs each
// runner it starts with its command line, "--parallel N" its slots.
type ServerLog struct {
	path string
	mu   sync.Mutex
	off  int64       // where the lines not yet read start
	pool []CacheLoad // loads read and not yet claimed, oldest first
	// seen: the log has cache lines (it had one, or its server's family
	// writes them: Expect), so Claim waits a moment for a late one.
	seen bool
}

// Expect says that the server writes cache lines (its family's
// Traits.CacheLog): Claim waits a moment for one not yet in the log.
func (l *ServerLog) Expect() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = true
}

// SourceServerLog names a cached count a server's log gave (the
// cached_source and verified_by of a row).
const SourceServerLog = "server_log"

// maxLogRead bounds what one read of a server log takes in: the lines a
// request added, or the tail a slot count is looked for in.
const maxLogRead = 64 << 20

// OpenServerLog opens the log at path for reading from its current end.
func OpenServerLog(path string) (*ServerLog, error) {
	l := &ServerLog{path: path}
	if err := l.Mark(); err != nil {
		return nil, err
	}
	return l, nil
}

// Path returns the log's path.
func (l *ServerLog) Path() string { return l.path }

// Mark forgets what the log said so far: the next Claim looks only at
// lines written from now on. Call it before sending a request that
// Claim is to find alone.
func (l *ServerLog) Mark() error {
	st, err := os.Stat(l.path)
	if err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	if !st.Mode().IsRegular() {
		// A FIFO would block every open until a writer comes.
		return fmt.Errorf("server log: %s is not a regular file: kvtier reads a log file as it grows", l.path)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.off, l.pool = st.Size(), nil
	return nil
}

// A CacheLoad is one request's taking of a cache slot, as the log says.
type CacheLoad struct {
	Prompt int // prompt tokens
	Used   int // of them, taken from the cache
}

var (
	loadRE     = regexp.MustCompile(`msg="loading cache slot".*\bprompt=(\d+) used=(\d+) remaining=(\d+)`)
	parallelRE = regexp.MustCompile(`msg="starting llama server".*--parallel (\d+)`)
)

// loads returns the cache loads logged since the last read, and moves
// past them; l.mu is held. A log rotated or cut since reads from its
// start.
func (l *ServerLog) loads() ([]CacheLoad, error) {
	b, err := l.read(l.off)
	if err != nil {
		return nil, err
	}
	l.off += int64(len(b))
	var out []CacheLoad
	for _, line := range bytes.Split(b, []byte("\n")) {
		m := loadRE.FindSubmatch(line)
		if m == nil {
			continue
		}
		prompt, _ := strconv.Atoi(string(m[1]))
		used, _ := strconv.Atoi(string(m[2]))
		if used > prompt || prompt > maxServerCount {
			continue // not a line kvtier understands
		}
		out = append(out, CacheLoad{Prompt: prompt, Used: used})
	}
	return out, nil
}

// read returns the log from off to its end (at most maxLogRead bytes,
// ending at a whole line); off past the end (the log was cut) reads from
// the start.
func (l *ServerLog) read(off int64) ([]byte, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	if off > st.Size() {
		off = 0
	}
	b, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, off, st.Size()-off), maxLogRead))
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1] // a line still being written is read next time
	} else {
		b = nil
	}
	return b, nil
}

// Slots returns the slots of the last runner the log says the server
// started ("--parallel N"); N 0 when it says none (the model not loaded
// yet, another family's log).
func (l *ServerLog) Slots() Slots {
	f, err := os.Stat(l.path)
	if err != nil {
		return Slots{}
	}
	b, err := l.read(max(f.Size()-maxLogRead, 0))
	if err != nil {
		return Slots{}
	}
	var n int
	for _, m := range parallelRE.FindAllSubmatch(b, -1) {
		if v, err := strconv.Atoi(string(m[1])); err == nil && v > 0 && v <= maxSlots {
			n = v
		}
	}
	if n == 0 {
		return Slots{}
	}
	return Slots{N: n, Source: fmt.Sprintf("server log %s: --parallel %d", l.path, n)}
}

// logSettle is how long Claim waits for a cache line that has not
// reached the log yet (the runner writes it through the server).
const logSettle = time.Second

// Claim returns the prompt tokens a finished request of prompt tokens
// (0: unknown) took from the cache, as the log says: the oldest cache
// load of that prompt not claimed before, when the loads of that prompt
// waiting agree (two concurrent requests of one length that the log
// gives different counts cannot be told apart). why says why there is
// none.
func (l *ServerLog) Claim(prompt int) (n int, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	deadline := time.Now().Add(logSettle) // how long to wait for the log, not a measurement
	for {
		loads, err := l.loads()
		if err != nil {
			return 0, err.Error()
		}
		l.pool = append(l.pool, loads...)
		l.seen = l.seen || len(loads) > 0
		var at []int
		for i, c := range l.pool {
			if prompt <= 0 || c.Prompt == prompt {
				at = append(at, i)
			}
		}
		if len(at) > 0 {
			c := l.pool[at[0]]
			for _, i := range at[1:] {
				if l.pool[i].Used != c.Used {
					return 0, fmt.Sprintf("the server log has %d cache lines of a %d-token prompt that disagree (concurrent requests of one length)", len(at), prompt)
				}
			}
			l.pool = append(l.pool[:at[0]], l.pool[at[0]+1:]...)
			return c.Used, ""
		}
		if !l.seen || time.Now().After(deadline) { // the wait's deadline, not a measurement
			return 0, fmt.Sprintf("the server log %s has no cache line of a %d-token prompt (Ollama writes them with OLLAMA_DEBUG=1)", l.path, prompt)
		}
		l.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		l.mu.Lock()
	}
}
