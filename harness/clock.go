package harness

import "time"

// A Stopwatch is the measuring core's monotonic clock for timelines that
// are not samples of a Case: MB1's token arrivals during a prefill and
// replay's dispatch schedule. Its readings, like the Sampler's timers',
// are the only clock readings that become row values, so every suite's
// durations come from one place.
type Stopwatch struct {
	start time.Time
}

// StartStopwatch starts a Stopwatch now.
func StartStopwatch() Stopwatch { return Stopwatch{start: time.Now()} }

// Elapsed is the time since the Stopwatch started.
func (s Stopwatch) Elapsed() time.Duration { return time.Since(s.start) }

// Seconds is Elapsed in seconds, the unit of every row.
func (s Stopwatch) Seconds() float64 { return s.Elapsed().Seconds() }

// At is the moment d after the Stopwatch started, for a wait until then.
func (s Stopwatch) At(d time.Duration) time.Time { return s.start.Add(d) }
