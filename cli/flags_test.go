package cli

import (
	"io"
	"testing"
	"time"

	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/tiers"
)

// TestNUMAFlag: --numa takes auto (the default), -1 or a node, and
// refuses anything else.
func TestNUMAFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    string
		want int
		ok   bool
	}{{"auto", -2, true}, {"-1", -1, true}, {"3", 3, true}, {"-2", 0, false}, {"near", 0, false}, {"1024", 0, false}} {
		var n NUMAFlag
		err := n.Set(c.v)
		if (err == nil) != c.ok || c.ok && int(n) != c.want {
			t.Errorf("--numa %s: %d, %v", c.v, n, err)
		}
	}
	var f BackendFlags
	fs := NewFlagSet("x", "", io.Discard)
	f.Add(fs)
	if f.NUMA != tiers.NUMAAuto || fs.Lookup("numa").DefValue != "auto" {
		t.Errorf("--numa defaults to %d (%s), want auto", f.NUMA, fs.Lookup("numa").DefValue)
	}
}

// TestShippedBinaryReadsNoFaultSwitches: without -tags
// kvtier_testfaults the KVTIER_TEST_* switches (one of which turned the
// bounds checks off) do nothing; before, the shipped binary read them.
func TestShippedBinaryReadsNoFaultSwitches(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "1" }
	if f := buildFaults(getenv); f.SkipBounds || f.CorruptRKey || f.OutOfPool {
		t.Errorf("shipped binary's faults = %+v", f)
	}
	if f := EnvFaults(getenv); !f.SkipBounds || !f.CorruptRKey || !f.OutOfPool {
		t.Errorf("the tests' faults do not read the environment: %+v", f)
	}
}

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
