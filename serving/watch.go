package serving

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kvtier/kvtier/units"
)

// Limits on what a server can make the client hold: every answer is read
// through a cap, so an endless or huge body is an error, never memory
// without bound (README "Limits").
const (
	// MaxJSONBytes bounds a JSON answer: /v1/models, /version,
	// /tokenize, /server_info, /query and a non-streamed completion.
	MaxJSONBytes = 16 << 20
	// MaxMetricsBytes bounds GET /metrics.
	MaxMetricsBytes = 16 << 20
	// MaxEventBytes bounds one line, and one event, of a stream.
	MaxEventBytes = 4 << 20
	// MaxStreamChunks bounds the choice chunks one stream may carry.
	MaxStreamChunks = 1 << 20
)

// An IdleError is a request its server left silent for longer than the
// idle timeout.
type IdleError struct {
	Wait string        // what the client was waiting for
	Idle time.Duration // the idle timeout
}

func (e *IdleError) Error() string {
	return fmt.Sprintf("the server sent no %s for %s (idle timeout)", e.Wait, e.Idle)
}

// A TooLargeError is an answer longer than the client reads.
type TooLargeError struct {
	What  string // "GET /metrics body", "stream event"
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s exceeds %s: refused", e.What, units.FormatBytes(e.Limit))
}

// A watch cancels a request when its server stays silent: armed with
// what the client waits for, it fires after the idle timeout unless the
// wait ends first (headers arrive, a read returns bytes). Waiting for the
// first byte of a generation, which may take as long as a prefill, it
// asks the server for GET /v1/models every idle timeout instead, and
// fires only when that goes unanswered: the server is silent, not busy.
type watch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	mu     sync.Mutex
	timer  *time.Timer
	wait   string                          // "" while disarmed
	ping   func(ctx context.Context) error // non-nil: heartbeat mode
	fired  error
	done   bool
}

// watch returns a context of ctx that the returned watch cancels with an
// *IdleError; stop it when the request is done. With no idle timeout the
// watch never fires.
func (c *Client) watch(ctx context.Context) (context.Context, *watch) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watch{ctx: ctx, cancel: cancel, idle: c.Idle}
	if w.idle > 0 {
		w.timer = time.AfterFunc(time.Hour, w.fire)
		w.timer.Stop()
	}
	return ctx, w
}

func (w *watch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.done || w.fired != nil:
	case w.ping != nil:
		go w.beat(w.ping)
	case w.wait != "":
		w.fired = &IdleError{Wait: w.wait, Idle: w.idle}
		w.cancel(w.fired)
	}
}

// beat pings the server once: an answer re-arms the heartbeat, silence
// fails the request.
func (w *watch) beat(ping func(context.Context) error) {
	err := ping(w.ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.fired != nil || w.ping == nil {
		return // the request ended, or its answer began meanwhile
	}
	if _, ok := errors.AsType[*IdleError](err); ok {
		w.fired = &IdleError{Wait: "answer, nor any to GET /v1/models,", Idle: w.idle}
		w.cancel(w.fired)
		return
	}
	w.timer.Reset(w.idle)
}

// arm waits for wait ("response headers") for the idle timeout.
func (w *watch) arm(wait string) { w.set(wait, nil, true) }

// await waits for the first byte of an answer that may take long: every
// idle timeout, ping must show the server is alive.
func (w *watch) await(ping func(context.Context) error) { w.set("", ping, true) }

// data waits for the bytes of an answer: the idle timeout runs while the
// client waits in a read (reading), not while it handles what it read.
func (w *watch) data() { w.set("data", nil, false) }

func (w *watch) set(wait string, ping func(context.Context) error, run bool) {
	if w.timer == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wait, w.ping = wait, ping
	w.timer.Stop()
	if run && !w.done {
		w.timer.Reset(w.idle)
	}
}

// reading starts the idle timeout of a read of the answer.
func (w *watch) reading() {
	if w.timer == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wait == "data" && !w.done && w.fired == nil {
		w.timer.Reset(w.idle)
	}
}

// read ends a read that returned n bytes: the server sent something (so
// from now on silence is idleness, not a long first token), and the
// idle timeout pauses until the next read.
func (w *watch) read(n int) {
	if w.timer == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if n > 0 {
		w.wait, w.ping = "data", nil
	}
	if w.wait == "data" {
		w.timer.Stop()
	}
}

// err returns the *IdleError when the watch fired, else err.
func (w *watch) err(err error) error {
	if err == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired != nil {
		return w.fired
	}
	return err
}

// stop ends the watch and releases its context.
func (w *watch) stop() {
	w.mu.Lock()
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	w.cancel(context.Canceled)
}

// A body reads a response through the request's watch and a cap: each
// read must bring a byte within the idle timeout, and more than limit
// bytes are a *TooLargeError.
type body struct {
	r     io.Reader
	w     *watch
	left  int64
	limit int64
	what  string
}

func newBody(r io.Reader, w *watch, limit int64, what string) *body {
	return &body{r: r, w: w, left: limit, limit: limit, what: what}
}

func (b *body) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &TooLargeError{What: b.what, Limit: b.limit}
	}
	if b.left < int64(len(p)) {
		p = p[:b.left+1]
	}
	b.w.reading()
	n, err := b.r.Read(p)
	b.w.read(n)
	if int64(n) > b.left {
		n, b.left = int(b.left), -1
		return n, &TooLargeError{What: b.what, Limit: b.limit}
	}
	b.left -= int64(n)
	return n, b.w.err(err)
}
