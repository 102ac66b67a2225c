package trace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestTraceSizes: several traces are weighed by their sizes, so that the
// ETA after a small one counts a large one ahead; standard input or a
// missing file leaves them counted alike.
func TestTraceSizes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	small, large := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	os.WriteFile(small, make([]byte, 10), 0o644)
	os.WriteFile(large, make([]byte, 1000), 0o644)
	if got := traceSizes([]string{small, large}); !slices.Equal(got, []float64{10 / traceBytesPerSec, 1000 / traceBytesPerSec}) {
		t.Errorf("sizes %v, want 10 and 1000 bytes' worth", got)
	}
	if got := traceSizes([]string{small, "-"}); got != nil {
		t.Errorf("with standard input: %v, want none", got)
	}
}
