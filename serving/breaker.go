package serving

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// ErrTimeouts is the error of a request not sent because the client's
// circuit breaker tripped: too many consecutive requests to the server
// timed out (a hung engine whose API still answers).
var ErrTimeouts = errors.New("too many consecutive timeouts")

// DefaultMaxTimeouts is the --max-timeouts of every HTTP command: the
// consecutive timeouts after which a suite stops.
const DefaultMaxTimeouts = 3

// A breaker counts a server's consecutive timeouts; it is shared by the
// clients of one server (Client.With).
type breaker struct {
	max int32        // 0: never trips
	n   atomic.Int32 // consecutive timeouts so far
}

// SetMaxTimeouts makes the client (and those made from it with With)
// refuse to send once n consecutive requests timed out; 0 never.
func (c *Client) SetMaxTimeouts(n int) { c.brk.max = int32(max(n, 0)) }

// Tripped returns an error wrapping ErrTimeouts once the breaker
// tripped, nil before.
func (c *Client) Tripped() error {
	b := c.brk
	if b.max == 0 || b.n.Load() < b.max {
		return nil
	}
	return fmt.Errorf("%w: %d consecutive requests to %s timed out (--max-timeouts %d): the server looks hung, so nothing more is sent",
		ErrTimeouts, b.n.Load(), c.Base, b.max)
}

// record counts a request's outcome: a timeout (the client's own limit
// or its idle watch, not the caller's context) adds one, any answer
// resets the count.
func (c *Client) record(ctx context.Context, err error) {
	_, idle := errors.AsType[*IdleError](err)
	switch {
	case ctx.Err() != nil:
		// the caller gave up: says nothing of the server
	case idle || errors.Is(err, context.DeadlineExceeded):
		c.brk.n.Add(1)
	default:
		c.brk.n.Store(0)
	}
}

// TrippedReason reports whether a row's reason is the breaker's: a row
// to skip, not to fail.
func TrippedReason(reason string) bool { return strings.Contains(reason, ErrTimeouts.Error()) }

// Skipped reports whether err is a request the breaker did not send:
// its row is skipped, not failed.
func Skipped(err error) bool { return errors.Is(err, ErrTimeouts) }
