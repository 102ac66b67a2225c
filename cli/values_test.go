package cli

import (
	"slices"
	"testing"

	"github.com/kvtier/kvtier/units"
)

// A list flag's value given twice would be measured twice: it is
// refused, naming the flag and the value, also when written differently.
func TestListFlagRefusesDuplicates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		value, err string
		want       []int
	}{
		{"1k,2k", "", []int{1024, 2048}},
		{"1k,1k", `--prefix: "1k" is given twice: give each value once`, []int{7}},
		{"1k,2k,1024", `--prefix: "1024" is the same as "1k": give each value once`, []int{7}},
	} {
		var errs []error
		got := ListFlag(&errs, "prefix", c.value, units.ParseTokens, 7)
		var msg string
		if len(errs) > 0 {
			msg = "--" + errs[0].Error()
		}
		if msg != c.err || !slices.Equal(got, c.want) || len(errs) > 1 {
			t.Errorf("ListFlag(%q) = %v, %v; want %v, %q", c.value, got, errs, c.want, c.err)
		}
	}
}
