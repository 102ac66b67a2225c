package harness

import (
	"context"
	"fmt"
	"io"

	"github.com/kvtier/kvtier/results"
)

// A RequestCase is one configuration of a suite that measures a server
// over HTTP (probe: a tier at a prefix length): each sample is one
// request, timed by the serving client's request timer (package clock),
// which Do turns into the sample's row.
type RequestCase struct {
	// Label names the case in progress lines.
	Label string
	// Do sends the request of measured rep rep and returns its row: ok
	// with its times and verification, an error row, or a skipped one.
	// A warm-up request has rep -1 and its row is discarded.
	Do func(ctx context.Context, rep int) results.Row
	// Skip returns rep's row skipped for reason, for the reps left once
	// Stop says no more requests may go out.
	Skip func(rep int, reason string) results.Row
	// Stop, when not nil, returns why no more requests may be sent (the
	// client's breaker tripped on a hung server), nil while they may.
	Stop func() error
	// Log, when not nil, sees each row before it is written.
	Log func(results.Row)
}

// Requests measures request cases the way a Sampler measures device
// cases: the policy's warm-up requests discarded, its reps measured
// (fewer when the budget says so), one row per measured request written
// as it ends, skipped rows for requests that could not go out, and an
// interrupted request never written as the server's failure. It is the
// HTTP suites' one timing loop beside the Sampler.
type Requests struct {
	Suite  string // names the suite in progress lines
	Sink   results.Sink
	Log    io.Writer // the run's progress when it is a Progress; nil none
	Policy Policy
}

// Measure runs the warm-up and measured requests of c and writes a row
// per measured one. The error returned is one that must stop the run:
// ctx cancelled, or a row that could not be written.
func (s *Requests) Measure(ctx context.Context, c RequestCase) (Result, error) {
	var res Result
	pr := ProgressOf(s.Log)
	pr.Begin(c.Label)
	defer pr.End("")
	warm, err := s.warmup(ctx, &c)
	if err != nil {
		return res, err
	}
	res.Reps = s.Policy.reps(warm)
	var secs []float64
	for rep := range res.Reps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		pr.Rep(rep, res.Reps)
		row := s.request(ctx, &c, rep)
		if err := ctx.Err(); err != nil {
			return res, err // interrupted mid-request: not the server's failure
		}
		switch row.Status {
		case results.StatusOK:
			secs = append(secs, row.Seconds)
		case results.StatusError:
			res.Errors++
		}
		if c.Log != nil {
			c.Log(row)
		}
		if err := s.Sink.Write(row); err != nil {
			return res, fmt.Errorf("%s: %w", s.Suite, err)
		}
	}
	res.Seconds = results.Describe(secs)
	return res, nil
}

// request returns rep's row: measured, or skipped once c may send no
// more.
func (s *Requests) request(ctx context.Context, c *RequestCase, rep int) results.Row {
	if c.Stop != nil {
		if err := c.Stop(); err != nil {
			return c.Skip(rep, err.Error())
		}
	}
	return c.Do(ctx, rep)
}

// warmup sends the discarded requests and returns the last ok one's
// seconds (0 when none was ok): a failed warm-up request is not the
// case's failure, the measured ones say.
func (s *Requests) warmup(ctx context.Context, c *RequestCase) (float64, error) {
	var warm float64
	for w := range s.Policy.Warmup {
		if c.Stop != nil && c.Stop() != nil {
			break
		}
		ProgressOf(s.Log).Warmup(w, s.Policy.Warmup)
		row := c.Do(ctx, -1)
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if row.Status == results.StatusOK {
			warm = row.Seconds
		}
	}
	return warm, nil
}
