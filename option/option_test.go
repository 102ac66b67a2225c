package option

import (
	"errors"
	"fmt"
	"slices"
	"testing"
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
