package report

import (
	"slices"
	"testing"
)

// TestCompareCells: the generic section orders its configurations by
// value where a cell is a number (256 before 1024; it sorted "1024"
// before "256" as text), by text otherwise, column by column.
func TestCompareCells(t *testing.T) {
	t.Parallel()
	keys := []string{"b\x001024", "a\x00256", "b\x00256", "a\x001024", "b\x00x", "a\x0064"}
	slices.SortFunc(keys, compareCells)
	want := []string{"a\x0064", "a\x00256", "a\x001024", "b\x00256", "b\x001024", "b\x00x"}
	if !slices.Equal(keys, want) {
		t.Errorf("sorted %q, want %q", keys, want)
	}
}
