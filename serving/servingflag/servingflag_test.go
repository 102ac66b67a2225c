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
		full         bool
		configs, rep int
		est          time.Duration
		want         string
	}{
		{false, 3, 5, 91 * time.Second, "kvtier probe: 3 configurations × 5 reps, estimated 1m31s from the simulator's cost model"},
		{false, 1, 1, 9 * time.Second, "kvtier probe: 1 configuration × 1 rep, estimated 9s"},
		{true, 28, 5, 10 * time.Minute, "kvtier probe: --full: 28 configurations × 5 reps, estimated 10m0s"},
	} {
		var b strings.Builder
		SayEstimate(&b, "probe", tt.full, tt.configs, tt.rep, tt.est)
		if !strings.HasPrefix(b.String(), tt.want) {
			t.Errorf("full %v: %q, want %q", tt.full, b.String(), tt.want)
		}
	}
}
