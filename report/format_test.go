package report

import (
	"math"
	"testing"
)

// A share is a fraction of a whole: one outside [0, 1], as a server's
// impossible figure or a corrupt CSV gives, is no share to print.
func TestFmtShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		x    float64
		want string
	}{
		{0.796, "79.6 %"},
		{0, "0.0 %"},
		{1, "100.0 %"},
		{1 + 1e-12, "100.0 %"},
		{-1e-12, "0.0 %"},
		{1.5, ""},
		{72.649, ""},
		{-0.3, ""},
		{math.NaN(), ""},
		{math.Inf(1), ""},
	} {
		if got := FmtShare(tc.x); got != tc.want {
			t.Errorf("FmtShare(%g) = %q, want %q", tc.x, got, tc.want)
		}
	}
}
