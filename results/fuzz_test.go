package results

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseTable: any bytes give a table or an error naming the file
// corrupt; rows, malformed lines and a cut-short last line account for
// every line; nothing panics.
func FuzzParseTable(f *testing.F) {
	hdr := strings.Join(CommonColumns, ",") + "\n"
	row := strings.Repeat("x,", len(CommonColumns)-1) + "x\n"
	for _, s := range []string{hdr, hdr + row, hdr + row[:5], hdr + "\"a\n" + row, "a,a\n", "\x00\xff", hdr + "1,2\n" + row} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := ParseTable(b, "f.csv")
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "f.csv") {
				t.Fatalf("error %v: not corrupt, or not naming the file", err)
			}
			return
		}
		if len(tab.Header) == 0 {
			t.Fatal("a table without a header")
		}
		for _, m := range tab.Malformed {
			if m.Line < 2 {
				t.Fatalf("malformed line %d: before the first row", m.Line)
			}
		}
		_ = tab.Problems()
	})
}
