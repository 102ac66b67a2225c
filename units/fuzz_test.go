package units

import (
	"math"
	"strings"
	"testing"
)

// FuzzParse: sizes, token counts and lists of them parse to positive,
// in-range values or fail; they never panic, and a value printed back
// parses to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"16MiB", "1.5GB", "4096", "8k", "64Ki", "1,2k,4Mi", "1e17", "-1", "NaN", "+Inf", "0x10", "99999999TiB", " 3 , 5 ", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseBytes(s); err == nil {
			if n <= 0 || n > math.MaxInt64/2 {
				t.Fatalf("ParseBytes(%q) = %d", s, n)
			}
			if back, err := ParseBytes(FormatBytes(n)); err == nil && n < 1024 && back != n {
				t.Fatalf("ParseBytes(FormatBytes(%d)) = %d", n, back)
			}
		}
		if n, err := ParseTokens(s); err == nil {
			if n <= 0 || n > math.MaxInt32 {
				t.Fatalf("ParseTokens(%q) = %d", s, n)
			}
			if back, err := ParseTokens(strings.ReplaceAll(FormatTokens(n), ",", "")); err != nil || back != n {
				t.Fatalf("ParseTokens(FormatTokens(%d)) = %d, %v", n, back, err)
			}
		}
		if l, err := ParseList(s, ParseTokens); err == nil && len(l) != strings.Count(s, ",")+1 {
			t.Fatalf("ParseList(%q) = %v", s, l)
		}
	})
}
