package harness

import "github.com/kvtier/kvtier/clock"

// A Stopwatch is the measuring core's monotonic clock for timelines that
// are not samples of a Case: MB1's token arrivals during a prefill and
// replay's dispatch schedule (package clock, which the serving client's
// request timer shares).
type Stopwatch = clock.Stopwatch

// StartStopwatch starts a Stopwatch now.
func StartStopwatch() Stopwatch { return clock.Start() }
