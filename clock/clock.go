// Package clock is the measuring core's one monotonic clock for what is
// not a Sampler's sample: an HTTP request's timeline (sent, first token,
// each token, end), MB1's token arrivals during a prefill and replay's
// dispatch schedule. Its readings and the Sampler's timers are the only
// clock readings that become row values, so every suite's durations come
// from one place. It is a leaf, so that the serving client below the
// suites can time its requests here too.
package clock

import "time"

// A Stopwatch measures the time since it started.
type Stopwatch struct {
	start time.Time
}

// Start starts a Stopwatch now.
func Start() Stopwatch { return Stopwatch{start: time.Now()} }

// Elapsed is the time since the Stopwatch started.
func (s Stopwatch) Elapsed() time.Duration { return time.Since(s.start) }

// Seconds is Elapsed in seconds, the unit of every row.
func (s Stopwatch) Seconds() float64 { return s.Elapsed().Seconds() }

// At is the moment d after the Stopwatch started, for a wait until then.
func (s Stopwatch) At(d time.Duration) time.Time { return s.start.Add(d) }

// A Request is the timer of one HTTP request: Send marks the moment just
// before the request goes out (again, when it is sent again), and Since
// reads the time from then at each event that becomes a row value: the
// first token (TTFT), each token (ITL), the end (E2E).
type Request struct {
	sent Stopwatch
}

// Send marks the request as sent now.
func (r *Request) Send() { r.sent = Start() }

// Since is the time since the request was sent.
func (r *Request) Since() time.Duration { return r.sent.Elapsed() }
