// Package pattern fills and checks the verifiable contents of KV pools.
// The value of every 8-byte word depends only on a seed and the word's
// absolute offset in its pool, so any (offset, length) read from any pool
// (local, device, a remote peer) can be checked without a copy of the
// source: fetched data is verified against what the source must hold.
package pattern

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
)

// golden is splitmix64's increment: word k's state is seed + k·golden.
const golden = 0x9e3779b97f4a7c15

// word returns the pattern word at byte offset off (a multiple of 8).
func word(seed uint64, off int64) uint64 {
	// splitmix64 of the word index, keyed by the seed.
	return mix(seed + uint64(off/8)*golden)
}

// mix is splitmix64's output function of a state.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Fill writes the pattern of pool seed into p, which holds the pool's
// bytes starting at offset off. Large buffers are filled in parallel.
func Fill(p []byte, seed uint64, off int64) { fillParallel(p, seed, off, 64<<20) }

// fillParallel fills p on every CPU when it is at least par bytes long.
func fillParallel(p []byte, seed uint64, off int64, par int) {
	if len(p) < par {
		fill(p, seed, off)
		return
	}
	n := runtime.GOMAXPROCS(0)
	step := (len(p)/n + 7) &^ 7
	var wg sync.WaitGroup
	for i := 0; i < len(p); i += step {
		end := min(i+step, len(p))
		wg.Add(1)
		go func(i, end int) {
			defer wg.Done()
			fill(p[i:end], seed, off+int64(i))
		}(i, end)
	}
	wg.Wait()
}

func fill(p []byte, seed uint64, off int64) {
	var buf [8]byte
	i := 0
	// Leading bytes up to a word boundary.
	for ; i < len(p) && (off+int64(i))%8 != 0; i++ {
		o := off + int64(i)
		binary.LittleEndian.PutUint64(buf[:], word(seed, o-o%8))
		p[i] = buf[o%8]
	}
	z := seed + uint64((off+int64(i))/8)*golden
	for ; i+8 <= len(p); i += 8 {
		binary.LittleEndian.PutUint64(p[i:], mix(z))
		z += golden
	}
	if i < len(p) {
		binary.LittleEndian.PutUint64(buf[:], word(seed, off+int64(i)))
		copy(p[i:], buf[:])
	}
}

// A Mismatch says where fetched data first differs from the source.
type Mismatch struct {
	Offset     int64 // absolute pool offset of the first bad byte
	Got, Want  byte
	BadBytes   int64 // bytes that differ in the checked range
	CheckedLen int64
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("data mismatch at pool offset %d: got %#02x, want %#02x (%d of %d bytes differ)",
		m.Offset, m.Got, m.Want, m.BadBytes, m.CheckedLen)
}

// Check verifies that p holds the pattern of pool seed from offset off.
// It returns nil or a *Mismatch.
func Check(p []byte, seed uint64, off int64) error {
	i := 0
	if off%8 == 0 {
		// Whole aligned words, the common case, in a tight loop; the
		// first word that differs, and any tail, go the careful way.
		z := seed + uint64(off/8)*golden
		for ; i+8 <= len(p) && binary.LittleEndian.Uint64(p[i:]) == mix(z); i += 8 {
			z += golden
		}
		if i == len(p) {
			return nil
		}
	}
	return checkFrom(p, seed, off, i)
}

// checkFrom is Check of p from index i on (p[:i] is known good), byte by
// byte where a word differs, counting every bad byte.
func checkFrom(p []byte, seed uint64, off int64, i int) error {
	var want [8]byte
	var first *Mismatch
	var bad int64
	for i < len(p) {
		o := off + int64(i)
		base := o - o%8
		binary.LittleEndian.PutUint64(want[:], word(seed, base))
		// Fast path: a whole aligned word.
		if o%8 == 0 && i+8 <= len(p) {
			if binary.LittleEndian.Uint64(p[i:]) == binary.LittleEndian.Uint64(want[:]) {
				i += 8
				continue
			}
		}
		end := min(len(p), i+int(8-o%8))
		for j := i; j < end; j++ {
			w := want[(off+int64(j))%8]
			if p[j] != w {
				bad++
				if first == nil {
					first = &Mismatch{Offset: off + int64(j), Got: p[j], Want: w}
				}
			}
		}
		i = end
	}
	if first != nil {
		first.BadBytes, first.CheckedLen = bad, int64(len(p))
		return first
	}
	return nil
}
