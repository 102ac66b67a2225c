package harness

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A Progress says on stderr where a long run is: [i/N] configurations,
// the current one and its repetition, the time elapsed and an estimate
// of the time left, and what a waiting phase waits for. On a terminal it
// is one line, redrawn in place; elsewhere (a log file, a pipe) it is one
// line per configuration as each ends, and one per waiting phase.
//
// A Progress is also the writer of everything else the command says on
// stderr: each Write first clears the status line, so that a message (a
// final one-line error above all) is never mixed with it. It reports
// nothing until Start, which a command calls once its input is valid,
// and nothing after Stop; Start(quiet) silences it. It never says
// "warning" or "error": those are the messages' words.
//
// The methods of a nil *Progress do nothing, so that code measuring for
// a caller that wants no progress (a test, go test -bench) need not ask.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	fd    int // the terminal's descriptor; -1 when w is not a terminal
	on    bool
	quiet bool
	name  string // the command, "kvtier NAME: " before each line
	start time.Time
	// planned is when the first configurations were planned: the ETA
	// scales the work left by the time since, so that what a command
	// does before it measures (the machine's facts, a backend opened)
	// is not taken for the first configuration's cost.
	planned time.Time
	now     func() time.Time // the clock of elapsed and ETA (tests set it)

	total, done int
	weights     []float64 // each configuration's relative cost, when planned with them
	label       string    // the configuration under way; "" between them
	step        string    // "rep 2/5", "warm-up 1/2"
	frac        float64
	wait        string // what the run waits for; "" when it does not
	waitSeq     int    // counts the waits, so that a late line is of the wait it was for
	waitAfter   time.Duration
	shown       bool // a status line is on the terminal
	tick        chan struct{}
}

// NewProgress returns a Progress writing to w, a terminal when
// IsTerminal(w), not yet started.
func NewProgress(w io.Writer) *Progress {
	return &Progress{w: w, fd: terminalFd(w), now: time.Now, waitAfter: WaitLine}
}

// IsTerminal reports whether w is a terminal (a writer with a file
// descriptor that has terminal attributes, as isatty says).
func IsTerminal(w io.Writer) bool { return terminalFd(w) >= 0 }

func terminalFd(w io.Writer) int {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || f.Fd() > 1<<30 {
		return -1
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return -1
	}
	return fd
}

// ProgressOf returns w when it is a *Progress, else nil (whose methods do
// nothing): the suites report through the writer their caller gave them
// for messages.
func ProgressOf(w io.Writer) *Progress {
	p, _ := w.(*Progress)
	return p
}

// Fd is the descriptor of the writer beneath, so that a terminal is
// still seen as one; ^0 where it is not a file.
func (p *Progress) Fd() uintptr {
	if f, ok := p.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

// Write writes b to the writer beneath, clearing the status line first
// and drawing it again after a complete line.
func (p *Progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	n, err := p.w.Write(b)
	if len(b) > 0 && b[len(b)-1] == '\n' {
		p.draw()
	}
	return n, err
}

// Start starts reporting for the command name; quiet keeps it silent.
// The clock of elapsed and ETA starts here.
func (p *Progress) Start(name string, quiet bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on, p.quiet, p.name, p.start = !quiet, quiet, name, p.now()
	p.planned = p.start
	p.total, p.done, p.label, p.step, p.wait = 0, 0, "", "", ""
	if p.on && p.fd >= 0 && p.tick == nil {
		p.tick = make(chan struct{})
		go p.ticker(p.tick)
	}
}

// ticker redraws the status line every second, so that elapsed time
// moves during a long sample or wait.
func (p *Progress) ticker(stop chan struct{}) {
	Every(time.Second, stop, func() bool {
		p.mu.Lock()
		p.draw()
		p.mu.Unlock()
		return true
	})
}

// Every calls f every d until stop is closed or f returns false: a
// status line's redraw, a link's heartbeat.
func Every(d time.Duration, stop <-chan struct{}, f func() bool) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if !f() {
				return
			}
		}
	}
}

// Stop clears the status line and ends reporting.
func (p *Progress) Stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.on = false
	if p.tick != nil {
		close(p.tick)
		p.tick = nil
	}
}

// Plan adds n configurations to the run's total, the N of [i/N].
func (p *Progress) Plan(n int) {
	p.update(func() {
		p.markPlanned()
		p.total += n
	})
}

// markPlanned notes the time of the run's first plan.
func (p *Progress) markPlanned() {
	if p.total == 0 && p.done == 0 {
		p.planned = p.now()
	}
}

// PlanWeights adds len(w) configurations whose estimated seconds, from
// the run's cost model, are w, in the order they run: the ETA then
// weighs what is done and left by them, so that a costly configuration
// ahead (a cache flood, a set-up) is in it, and starts from their sum
// until the run shows its own pace. Planned after configurations
// without weights, it is Plan(len(w)).
func (p *Progress) PlanWeights(w []float64) {
	p.update(func() {
		p.markPlanned()
		if p.total == len(p.weights) {
			p.weights = append(p.weights, w...)
		}
		p.total += len(w)
	})
}

// PlanEstimated adds n configurations, weighed by w where it has an
// estimate for each (PlanWeights), else counted alike (Plan).
func (p *Progress) PlanEstimated(n int, w []float64) {
	if len(w) == n {
		p.PlanWeights(w)
	} else {
		p.Plan(n)
	}
}

// doneWork is the share of the planned work done: configurations (and
// the fraction of the one under way), weighted where the plan has
// weights for every configuration.
func (p *Progress) doneWork() (done, total float64, weighed bool) {
	if len(p.weights) != p.total || p.total == 0 || !slices.ContainsFunc(p.weights, func(w float64) bool { return w > 0 }) {
		return float64(p.done) + p.frac, float64(p.total), false
	}
	for i, w := range p.weights {
		total += w
		switch {
		case i < p.done:
			done += w
		case i == p.done:
			done += p.frac * w
		}
	}
	return done, total, true
}

// Begin starts the next configuration, named label.
func (p *Progress) Begin(label string) {
	p.update(func() { p.label, p.step, p.frac, p.wait = strings.TrimSpace(label), "", 0, "" })
}

// Rep says that measured repetition i (from 0) of n is under way.
func (p *Progress) Rep(i, n int) { p.Step("rep", i, n) }

// Step says that step i (from 0) of n of the configuration, named what
// ("rep", "request"), is under way; the ETA counts it.
func (p *Progress) Step(what string, i, n int) {
	p.update(func() { p.step, p.frac = fmt.Sprintf("%s %d/%d", what, i+1, n), float64(i)/float64(max(n, 1)) })
}

// Warmup says that warm-up sample i (from 0) of n is under way.
func (p *Progress) Warmup(i, n int) {
	p.update(func() { p.step = fmt.Sprintf("warm-up %d/%d", i+1, n) })
}

// WaitLine is how long a wait lasts before it is a line of its own off a
// terminal: shorter ones would only double the lines of a log.
const WaitLine = 2 * time.Second

// Wait says what the run waits for ("the server to start"); "" ends the
// wait. Off a terminal a wait that lasts WaitLine is a line.
func (p *Progress) Wait(what string) {
	p.update(func() {
		if what != "" && what != p.wait && p.fd < 0 {
			p.waitSeq++
			seq := p.waitSeq
			if p.waitAfter <= 0 {
				p.line(p.done+1, "waiting for "+what)
			} else {
				p.lateWaitLine(seq, what)
			}
		}
		p.wait = what
	})
}

// lateWaitLine writes the line of wait seq, for what, after waitAfter if
// the run still waits for it then.
func (p *Progress) lateWaitLine(seq int, what string) {
	time.AfterFunc(p.waitAfter, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.on && p.waitSeq == seq && p.wait == what {
			p.line(p.done+1, "waiting for "+what)
		}
	})
}

// End ends the configuration Begin started, with what it found (a p50,
// "skipped: why"; "" for nothing): one line, [i/N], the configuration,
// what, the elapsed time and the ETA.
func (p *Progress) End(what string) {
	p.update(func() {
		p.done++
		p.frac, p.step, p.wait = 0, "", ""
		p.line(p.done, strings.TrimSpace(p.label+"  "+what))
		p.label = ""
	})
}

// Note writes one line of the run's account (a row measured) unless the
// run is quiet.
func (p *Progress) Note(line string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quiet {
		return
	}
	p.clear()
	fmt.Fprintln(p.w, line)
	p.draw()
}

// update runs f under the lock when p reports, and redraws.
func (p *Progress) update(f func()) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on {
		return
	}
	f()
	p.draw()
}

// line writes one permanent line about configuration i of [i/N].
func (p *Progress) line(i int, text string) {
	p.clear()
	fmt.Fprintf(p.w, "kvtier %s: %s %s (%s)\n", p.name, p.counter(i), text, p.timing())
}

// counter is "[i/N]", or "[i]" when no total was planned.
func (p *Progress) counter(i int) string {
	if p.total < i || p.total == 0 {
		return fmt.Sprintf("[%d]", i)
	}
	return fmt.Sprintf("[%d/%d]", i, p.total)
}

// timing is the elapsed time and the estimate of the time left, in
// proportion to the configurations (and repetitions) done since the
// first plan (with weights, which are estimated seconds, the estimates
// count as a tenth of the run done at their own pace, so that the
// first configuration, the least telling, does not set the pace
// alone),
// weighted by their estimated costs where the plan has them; none
// once every configuration ended (an interrupted one too: what is left
// was not run, not done in no time), and never "0s" while one is left.
func (p *Progress) timing() string {
	el := p.now().Sub(p.start)
	s := roundDuration(el) + " elapsed"
	done, total, weighed := p.doneWork()
	switch {
	case p.total > 0 && p.done >= p.total:
		return s
	case p.total == 0 || done <= 0 || done > total:
		return s + ", ETA unknown"
	}
	sec, prior := p.now().Sub(p.planned).Seconds(), 0.0
	if weighed {
		prior = total / 10
	}
	left := time.Duration((sec + prior) / (done + prior) * (total - done) * float64(time.Second))
	if left < 50*time.Millisecond {
		return s + ", ETA under 0.1s"
	}
	return s + ", ETA " + roundDuration(left)
}

// roundDuration writes d to the second ("1m5s"), or to the tenth of a
// second under ten seconds.
func roundDuration(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// draw draws the status line on a terminal.
func (p *Progress) draw() {
	if !p.on || p.fd < 0 {
		return
	}
	i := p.done
	if p.label != "" {
		i++
	}
	parts := []string{p.counter(i)}
	for _, s := range []string{p.label, p.step} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if p.wait != "" {
		parts = append(parts, "waiting for "+p.wait)
	}
	parts = append(parts, p.timing())
	s := []rune("kvtier " + p.name + ": " + strings.Join(parts, " · "))
	if w := p.width(); len(s) > w {
		s = append(s[:w-1], '…')
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", string(s))
	p.shown = true
}

// clear erases the status line from the terminal.
func (p *Progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// width is the terminal's width less one column, 79 where unknown.
func (p *Progress) width() int {
	if ws, err := unix.IoctlGetWinsize(p.fd, unix.TIOCGWINSZ); err == nil && ws.Col > 10 {
		return int(ws.Col) - 1
	}
	return 79
}

// Note writes line to w as a line of the run's account: through w's
// Progress when w is one (silent when the run is quiet), else as it is.
func Note(w io.Writer, line string) {
	if p := ProgressOf(w); p != nil {
		p.Note(line)
	} else if w != nil {
		fmt.Fprintln(w, line)
	}
}
