package servingflag

import (
	"strings"
	"testing"
	"time"
)

// TestSayEstimate: every --sim run says its estimate before it starts,
// and the full grid says it is one.
func TestSayEstimate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		full bool
		want string
	}{
		{false, "kvtier probe: 3 configurations × 5 reps, estimated 1m31s from the simulator's cost model"},
		{true, "kvtier probe: --full: 28 configurations × 5 reps, estimated 10m0s"},
	} {
		var b strings.Builder
		n, est := 3, 91*time.Second
		if tt.full {
			n, est = 28, 10*time.Minute
		}
		SayEstimate(&b, "probe", tt.full, n, 5, est)
		if !strings.HasPrefix(b.String(), tt.want) {
			t.Errorf("full %v: %q, want %q", tt.full, b.String(), tt.want)
		}
	}
}
