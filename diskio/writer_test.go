package diskio

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/pattern"
)

// TestWritersAgree writes the same scattered plan (a load's turned
// around: Src in the buffer, Dst in the file) with io_uring and with
// pwrite, direct and through the page cache, then reads every chunk of
// the file back and checks it against the pattern at its buffer offset.
func TestWritersAgree(t *testing.T) {
	t.Parallel()
	const chunk, n, slots = 16 << 10, 150, 200
	load := scattered(n, slots, chunk)
	plan := make([]kv.Copy, n)
	for i, c := range load {
		plan[i] = kv.Copy{Src: c.Dst, Dst: c.Src, Bytes: c.Bytes}
	}
	for _, tc := range []struct {
		mode   string
		depth  int
		direct bool
	}{{Uring, 32, true}, {Uring, 4, false}, {Pwrite, 1, true}, {Pread, 1, false}} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			path := patternFile(t, slots*chunk) // other bytes, so a missing write shows
			f, err := OpenWrite(path, tc.direct)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			src := buffer(t, n*chunk)
			pattern.Fill(src, seed+1, 0)
			w, err := NewWriter(tc.mode, tc.depth, src)
			if errors.Is(err, ErrRefused) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if tc.mode == Uring && !w.Fixed() {
				t.Errorf("ring writer did not register its buffer")
			}
			if err := w.Write(context.Background(), f, plan); err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range plan {
				if err := pattern.Check(data[c.Dst:c.Dst+c.Bytes], seed+1, c.Src); err != nil {
					t.Fatalf("chunk %d: %v", i, err)
				}
			}
			if err := w.Write(context.Background(), f, []kv.Copy{{Src: int64(len(src)), Dst: 0, Bytes: chunk}}); err == nil {
				t.Error("a write from outside the buffer succeeded")
			}
		})
	}
}
