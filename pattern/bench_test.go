package pattern

// Speed targets of the data check: every verified rep of every suite
// checks its whole payload against the pattern (about 2 GB/s per core
// here).

import "testing"

func BenchmarkCheck(b *testing.B) {
	p := make([]byte, 64<<20)
	fill(p, 7, 0)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if err := Check(p, 7, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFill(b *testing.B) {
	p := make([]byte, 64<<20)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		fill(p, 7, 0)
	}
}
