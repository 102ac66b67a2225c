package tiers

import (
	"bytes"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/pattern"
)

// scrubByte overwrites working-pool bytes before a verified sample. It is
// not a value the pattern avoids, but a stale byte that happens to match
// cannot hide a whole chunk that was never written.
const scrubByte = 0xa5

// scrubAll overwrites every byte of b.
func scrubAll(b Buffer) error {
	return ScrubRanges(b, []kv.Copy{{Dst: 0, Bytes: b.Size()}})
}

// ScrubRanges overwrites the destination ranges of cs in b: exactly those
// ranges in host memory; all of a device buffer, where one large write
// costs less than a synchronous driver copy per chunk.
func ScrubRanges(b Buffer, cs []kv.Copy) error {
	src := make([]byte, min(fillChunk, max(b.Size(), 1)))
	for i := range src {
		src[i] = scrubByte
	}
	if h := b.Host(); h != nil {
		for _, c := range cs {
			for p := h[c.Dst : c.Dst+c.Bytes]; len(p) > 0; {
				p = p[copy(p, src):]
			}
		}
		return nil
	}
	for off := int64(0); off < b.Size(); off += int64(len(src)) {
		if _, err := b.WriteAt(src[:min(int64(len(src)), b.Size()-off)], off); err != nil {
			return fmt.Errorf("scrub: %w", err)
		}
	}
	return nil
}

// CheckRanges checks every range of cs in dst against the source pattern, in
// parallel over the machine's CPUs, and returns the index of the first
// (lowest) range that fails with its error, or -1 and nil.
func CheckRanges(dst Buffer, cs []kv.Copy, seed uint64) (int, error) {
	if dst.Host() == nil {
		return checkDevice(dst, cs, seed)
	}
	return checkEach(cs, func(c kv.Copy) error { return checkRange(dst, c, seed) })
}

// checkFrom is CheckRanges for a source pool in host memory: each range
// of dst is compared with the bytes of src it was copied from (a memory
// compare, several times faster than recomputing the pattern), and a
// range that differs is then named by the pattern.
func checkFrom(dst, src Buffer, cs []kv.Copy, seed uint64) (int, error) {
	d, s := dst.Host(), src.Host()
	if d == nil || s == nil {
		return CheckRanges(dst, cs, seed)
	}
	return checkEach(cs, func(c kv.Copy) error {
		if bytes.Equal(d[c.Dst:c.Dst+c.Bytes], s[c.Src:c.Src+c.Bytes]) {
			return nil
		}
		if err := checkRange(dst, c, seed); err != nil {
			return err
		}
		return fmt.Errorf("working pool at %d differs from the source pool at %d, which no longer holds the pattern", c.Dst, c.Src)
	})
}

// checkEach runs check on every range, in parallel over the machine's
// CPUs, and returns the lowest index that fails with its error, or -1.
func checkEach(cs []kv.Copy, check func(kv.Copy) error) (int, error) {
	workers := min(runtime.GOMAXPROCS(0), len(cs))
	if workers <= 1 {
		for i, c := range cs {
			if err := check(c); err != nil {
				return i, err
			}
		}
		return -1, nil
	}
	var (
		mu       sync.Mutex
		firstIdx = len(cs)
		firstErr error
		wg       sync.WaitGroup
	)
	per := (len(cs) + workers - 1) / workers
	for lo := 0; lo < len(cs); lo += per {
		hi := min(lo+per, len(cs))
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if err := check(cs[i]); err != nil {
					mu.Lock()
					if i < firstIdx {
						firstIdx, firstErr = i, err
					}
					mu.Unlock()
					return
				}
			}
		}(lo, hi)
	}
	wg.Wait()
	if firstErr != nil {
		return firstIdx, firstErr
	}
	return -1, nil
}

// readbackWindow is how much of a device buffer checkDevice reads back
// at once.
const readbackWindow = 64 << 20

// checkDevice checks the ranges cs of a device buffer by reading it back
// in windows, in ascending order of destination, so that a check costs a
// few large copies instead of one synchronous copy per chunk. It returns
// the lowest index of a failing range, as CheckRanges does.
func checkDevice(dst Buffer, cs []kv.Copy, seed uint64) (int, error) {
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return cs[order[a]].Dst < cs[order[b]].Dst })
	var win []byte
	ws, we := int64(0), int64(-1)
	first, firstErr := -1, error(nil)
	for _, i := range order {
		c := cs[i]
		if c.Dst < ws || c.Dst+c.Bytes > we {
			n := min(max(readbackWindow, c.Bytes), dst.Size()-c.Dst)
			if int64(cap(win)) < n {
				win = make([]byte, n)
			}
			if _, err := dst.ReadAt(win[:n], c.Dst); err != nil {
				return i, fmt.Errorf("read back: %w", err)
			}
			ws, we = c.Dst, c.Dst+n
		}
		off := c.Dst - ws
		if err := pattern.Check(win[off:off+c.Bytes], seed, c.Src); err != nil && (first < 0 || i < first) {
			first, firstErr = i, err
		}
	}
	return first, firstErr
}
