// Package loadcheck tells a real-time test whether this machine kept pace
// while it ran. A Probe asks to sleep a few milliseconds over and over and
// records how late it woke: on a machine whose cores other work holds, a
// goroutine that is ready waits for a core, and so do the processes a
// test measures. A test whose check needs the machine's pace skips,
// naming the lateness, when the probe says it was not there, rather than
// failing on a figure the machine, not the code, decided.
package loadcheck

import (
	"fmt"
	"sync"
	"time"
)

// tick is how long the probe asks to sleep each time.
const tick = 5 * time.Millisecond

// A Probe measures how late a sleeping goroutine wakes, from Start to
// Stop.
type Probe struct {
	stop  chan struct{}
	done  sync.WaitGroup
	worst time.Duration // the latest wake-up past tick
	total time.Duration // the sum of the wake-ups past tick
	n     int
}

// Start starts a probe.
func Start() *Probe {
	p := &Probe{stop: make(chan struct{})}
	p.done.Add(1)
	go p.run()
	return p
}

func (p *Probe) run() {
	defer p.done.Done()
	t := time.NewTimer(tick)
	defer t.Stop()
	for {
		start := time.Now()
		t.Reset(tick)
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		late := max(time.Since(start)-tick, 0)
		p.worst = max(p.worst, late)
		p.total += late
		p.n++
	}
}

// A Report is what a probe measured.
type Report struct {
	Worst, Mean time.Duration // lateness of the wake-ups
	Wakeups     int
}

// Stop stops the probe and reports what it measured.
func (p *Probe) Stop() Report {
	close(p.stop)
	p.done.Wait()
	r := Report{Worst: p.worst, Wakeups: p.n}
	if p.n > 0 {
		r.Mean = p.total / time.Duration(p.n)
	}
	return r
}

// Busy reports whether the machine was too loaded for a check that needs
// its pace: a wake-up later than worst, or a mean lateness over mean.
func (r Report) Busy(worst, mean time.Duration) bool { return r.Worst > worst || r.Mean > mean }

// String says what the probe measured, for a skip message.
func (r Report) String() string {
	return fmt.Sprintf("a goroutine sleeping %v woke up to %v late (%v on average over %d wake-ups)",
		tick, r.Worst.Round(time.Millisecond), r.Mean.Round(10*time.Microsecond), r.Wakeups)
}
