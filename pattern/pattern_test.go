package pattern

import (
	"errors"
	"testing"
)

func TestFillCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		off, size int64
	}{
		{"aligned", 0, 4096},
		{"unaligned start", 3, 1000},
		{"unaligned tiny", 13, 5},
		{"parallel", 8, 3<<20 + 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := make([]byte, tt.size)
			// A 1 MiB threshold sends the last case down the parallel path
			// without the tens of MiB that make -race slow.
			fillParallel(p, 42, tt.off, 1<<20)
			if err := Check(p, 42, tt.off); err != nil {
				t.Fatal(err)
			}
			if err := Check(p, 43, tt.off); err == nil {
				t.Fatal("another seed's pattern accepted")
			}
			if tt.size > 8 {
				if err := Check(p[1:], 42, tt.off); err == nil {
					t.Fatal("shifted data accepted")
				}
			}
			p[len(p)-1] ^= 0xff
			var m *Mismatch
			if err := Check(p, 42, tt.off); !errors.As(err, &m) || m.Offset != tt.off+tt.size-1 || m.BadBytes != 1 {
				t.Fatalf("corrupt last byte: got %v", err)
			}
		})
	}
}

func TestParallelMatchesSerial(t *testing.T) {
	t.Parallel()
	serial := make([]byte, 3<<20+13)
	fill(serial, 9, 21)
	par := make([]byte, len(serial))
	fillParallel(par, 9, 21, 1<<20)
	if string(serial) != string(par) {
		t.Fatal("the parallel fill differs from the serial one")
	}
}

func TestSubrangeMatchesWhole(t *testing.T) {
	t.Parallel()
	whole := make([]byte, 1024)
	Fill(whole, 7, 0)
	part := make([]byte, 100)
	Fill(part, 7, 333)
	if string(part) != string(whole[333:433]) {
		t.Fatal("a sub-range fill differs from the same range of a whole fill")
	}
}
