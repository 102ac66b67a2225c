package option

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	t.Parallel()
	sentinel := errors.New("endpoint unreachable")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"one field", Errorf("reps", "want 1 or more, got %d", 0), "--reps: want 1 or more, got 0"},
		{"joined", errors.Join(Errorf("reps", "bad"), errors.New("plain\nsecond line"), Wrap("out", errors.New("read-only"))),
			"--reps: bad; plain; second line; --out: read-only"},
		{"nested join", errors.Join(errors.Join(Errorf("a", "x")), Errorf("b", "y")), "--a: x; --b: y"},
		{"two %w stay whole", fmt.Errorf("%w: %w", sentinel, errors.New("refused")), "endpoint unreachable: refused"},
		{"wrapped field", fmt.Errorf("opening: %w", Errorf("gpu", "no such device")), "opening: gpu: no such device"},
	} {
		if got := Render(tc.err, func(f string) string { return "--" + f }); got != tc.want {
			t.Errorf("%s: Render = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestFields(t *testing.T) {
	t.Parallel()
	err := errors.Join(Errorf("reps", "x"), fmt.Errorf("ctx: %w", Errorf("out", "y")), Errorf("reps", "z"), nil)
	if got := Fields(err); !slices.Equal(got, []string{"reps", "out"}) {
		t.Errorf("Fields = %v", got)
	}
	if Wrap("x", nil) != nil || Fields(nil) != nil {
		t.Error("nil error not kept nil")
	}
}

func TestRangeChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string // "" for nil
	}{
		{Range("reps", 1, 1, 1_000_000), ""},
		{Range("reps", 1_000_000, 1, 1_000_000), ""},
		{Range("reps", 0, 1, 1_000_000), "reps: want 1 to 1000000, got 0"},
		{Range("reorder", -1, 0, 4096, "0: the default"), "reorder: want 0 to 4096, got -1 (0: the default)"},
		{Range("time-scale", math.NaN(), 0, 1e6), "time-scale: want 0 to 1000000, got NaN"},
		{Range("time-scale", math.Inf(1), 0, 1e6), "time-scale: want 0 to 1000000, got +Inf"},
		{Positive("timeout", time.Duration(0)), "timeout: want more than 0, got 0s"},
		{Positive("timeout", time.Second), ""},
		{Positive("speedup", math.NaN()), "speedup: want more than 0, got NaN"},
		{NotNegative("idle-timeout", -time.Second), "idle-timeout: want 0 or more, got -1s"},
		{NotNegative("idle-timeout", time.Duration(0)), ""},
		{NotNegative("think", math.NaN()), "think: want 0 or more, got NaN"},
	} {
		got := ""
		if tc.err != nil {
			got = tc.err.Error()
			if f := Fields(tc.err); len(f) != 1 {
				t.Errorf("%q names fields %v, want one", got, f)
			}
		}
		if got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
