package resultstest

import (
	"strings"
	"testing"
)

// TestSameCSV: a column added and left empty, or columns in another
// order, are the same file; a value changed, a new column with values
// or a column gone are not, and the difference is named.
func TestSameCSV(t *testing.T) {
	t.Parallel()
	const golden = "tier,seconds\nhost,0.5\nrecompute,2\n"
	for _, tt := range []struct {
		got, diff string
	}{
		{"tier,seconds,sync\nhost,0.5,\nrecompute,2,\n", ""},
		{"seconds,tier\n0.5,host\n2,recompute\n", ""},
		{"tier,seconds\nhost,0.6\nrecompute,2\n", `row 1, column seconds: "0.6", the golden file has "0.5"`},
		{"tier,seconds,sync\nhost,0.5,none\nrecompute,2,\n", `row 1, column sync: "none"`},
		{"tier\nhost\nrecompute\n", "column seconds: gone"},
		{"tier,seconds\nhost,0.5\n", "1 rows, the golden file has 2"},
	} {
		err := SameCSV(tt.got, golden)
		if tt.diff == "" && err != nil || tt.diff != "" && (err == nil || !strings.Contains(err.Error(), tt.diff)) {
			t.Errorf("%q: %v, want %q", tt.got, err, tt.diff)
		}
	}
}
