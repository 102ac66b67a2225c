package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
		min  time.Duration
	}{
		{"passes", context.Background(), 20 * time.Millisecond, nil, 20 * time.Millisecond},
		{"nothing to wait", context.Background(), -time.Second, nil, 0},
		{"cancelled before", cancelled, time.Hour, context.Canceled, 0},
		{"cancelled, nothing to wait", cancelled, 0, context.Canceled, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			if err := For(tt.ctx, tt.d); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("For = %v, want %v", err, tt.want)
			}
			if el := time.Since(start); el < tt.min {
				t.Errorf("returned after %s, before %s", el, tt.min)
			}
		})
	}
}

// TestForCutShort checks a wait ends when its context does, not when its
// time is up.
func TestForCutShort(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Until(ctx, time.Now().Add(time.Hour)) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Until = %v, want the context's deadline", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Until waited past its context's end")
	}
}
