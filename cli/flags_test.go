package cli

import (
	"io"
	"testing"
	"time"

	"github.com/kvtier/kvtier/option"
)

// TestAddFields: each field type the tiers' options hold becomes a flag
// of its type with the field's value as default; another type panics.
func TestAddFields(t *testing.T) {
	t.Parallel()
	s, n, b, d := "x", 3, true, 2*time.Second
	fs := NewFlagSet("x", "", io.Discard)
	AddFields(fs, []option.Field{{Name: "s", Ptr: &s}, {Name: "n", Ptr: &n}, {Name: "b", Ptr: &b}, {Name: "d", Ptr: &d}})
	if err := fs.Parse([]string{"--s", "y", "--n", "4", "--b=false", "--d", "30"}); err != nil {
		t.Fatal(err)
	}
	if s != "y" || n != 4 || b || d != 30*time.Second || fs.Lookup("n").DefValue != "3" {
		t.Errorf("got %q %d %v %v, --n default %s", s, n, b, d, fs.Lookup("n").DefValue)
	}
	defer func() {
		if recover() == nil {
			t.Error("an int64 field did not panic")
		}
	}()
	var i int64
	AddFields(fs, []option.Field{{Name: "i", Ptr: &i}})
}
