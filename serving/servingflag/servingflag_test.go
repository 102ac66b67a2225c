package servingflag

import (
	"strings"
	"testing"
	"time"
)

// TestSayEstimate: a short grid's estimate is not said; a long one's is,
// before the run starts.
func TestSayEstimate(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	SayEstimate(&b, "probe", false, 21, 3, time.Minute)
	if b.Len() != 0 {
		t.Errorf("a short grid's estimate: %q", b.String())
	}
	SayEstimate(&b, "probe", false, 28, 3, 10*time.Minute)
	if !strings.Contains(b.String(), "kvtier probe: the grid: 28 configurations × 3 reps, estimated 10m0s") {
		t.Errorf("a long grid's estimate: %q", b.String())
	}
}
