package vllmsim

import (
	"sync"
	"time"
)

// lagMarks is how many recent /metrics scrapes a server keeps the lag
// since: a client whose before and after scrapes of a row have fewer
// than this many others in between reads its row's lag exactly.
const lagMarks = 32

// A lagMeter records how far the engine's modeled schedule fell behind
// the wall clock: at each step's end, how long after the wall-clock time
// its modeled end maps to it ended; at a request that woke an idle
// engine, how long after its arrival the engine took it up; and, at a
// scrape, how overdue the step in flight is. It keeps the most over the
// server's life and the most since each of the last lagMarks scrapes, so
// that a row's lag is the most the simulator fell behind during the
// row, not how much a running maximum rose (a simulator 2 s behind in
// an earlier row and 2 s behind again in this one rose by nothing).
type lagMeter struct {
	mu       sync.Mutex
	life     time.Duration
	marks    []lagMark // oldest first
	seq      uint64    // scrapes so far
	deadline time.Time // the step in flight's; zero while none is
}

// A lagMark is the most the engine fell behind since scrape seq.
type lagMark struct {
	seq  uint64
	most time.Duration
}

// observe records that the schedule was late by late.
func (m *lagMeter) observe(late time.Duration) {
	if late <= 0 {
		return
	}
	m.mu.Lock()
	m.record(late)
	m.mu.Unlock()
}

func (m *lagMeter) record(late time.Duration) {
	m.life = max(m.life, late)
	for i := range m.marks {
		m.marks[i].most = max(m.marks[i].most, late)
	}
}

// inFlight sets the wall-clock deadline of the step in flight; the zero
// time says none is.
func (m *lagMeter) inFlight(deadline time.Time) {
	m.mu.Lock()
	m.deadline = deadline
	m.mu.Unlock()
}

// most returns the most the engine fell behind over the server's life.
func (m *lagMeter) most() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.life
}

// scrape counts a scrape at now: it records how overdue the step in
// flight is, and returns the most over the server's life, the marks of
// the earlier scrapes still kept, and this scrape's number, whose mark
// starts now.
func (m *lagMeter) scrape(now time.Time) (life time.Duration, marks []lagMark, seq uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if late := now.Sub(m.deadline); !m.deadline.IsZero() && late > 0 {
		m.record(late)
	}
	marks = append(marks, m.marks...)
	m.seq++
	m.marks = append(m.marks, lagMark{seq: m.seq})
	if len(m.marks) > lagMarks {
		m.marks = append(m.marks[:0], m.marks[len(m.marks)-lagMarks:]...)
	}
	return m.life, marks, m.seq
}
