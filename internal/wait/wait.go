// Package wait is kvtier's one way to pause: for a while or until an
// instant, cut short when a context ends, with no timer left behind.
package wait

import (
	"context"
	"time"
)

// For waits d, or less when ctx ends first; it returns ctx's error then,
// and nil when d has passed. A d of zero or less only checks ctx.
func For(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Until waits until t, as For.
func Until(ctx context.Context, t time.Time) error { return For(ctx, time.Until(t)) }
