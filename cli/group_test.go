package cli

import (
	"io"
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// The test's groups: one whose flag a variable stands for, read from the
// environment after parsing, and one read by the commands that bind the
// first.
var (
	testGroup = NewGroup(FlagGroup{Name: "zz-test", Heading: "Test", Order: 1000,
		Env: []EnvVar{{Name: "ZZ_TEST_N", Flag: "zz-n", Meaning: "n"}},
		FromEnv: func(fs *pflag.FlagSet, getenv func(string) string) error {
			if v := getenv("ZZ_TEST_N"); v != "" && !fs.Changed("zz-n") {
				return fs.Set("zz-n", v)
			}
			return nil
		}})
	testReader = NewGroup(FlagGroup{Name: "zz-test-reader", Order: 1001, ReadBy: []string{"zz-test"},
		Env: []EnvVar{{Name: "ZZ_TEST_LIB", Meaning: "a library"}}})
)

// TestFlagGroup: the flags a group binds carry its name; a command reads
// the group's variables (and those of the groups read with it) only when
// it binds the group: a command without its flags never asks the
// environment for them, as a command without --ib-tc never reads
// NCCL_IB_TC.
func TestFlagGroup(t *testing.T) {
	t.Parallel()
	for _, bind := range []bool{true, false} {
		fs := NewFlagSet("x", "", io.Discard)
		fs.Int("own", 0, "a command's own flag")
		var n int
		if bind {
			testGroup.Bind(fs, func(fs *pflag.FlagSet) { fs.IntVar(&n, "zz-n", 1, "n") })
		}
		var asked []string
		getenv := func(k string) string { asked = append(asked, k); return "7" }
		if code, ok := ParseFlags(fs, nil, io.Discard, getenv); !ok || code != ExitOK {
			t.Fatalf("bind %v: parse: %d %v", bind, code, ok)
		}
		var names []string
		for _, e := range EnvOf(fs, nil) {
			names = append(names, e.Name)
		}
		if g, ok := GroupOf(fs.Lookup("own")); ok {
			t.Errorf("a command's own flag is in group %s", g.Name)
		}
		if !bind {
			if slices.Contains(asked, "ZZ_TEST_N") || slices.Contains(names, "ZZ_TEST_N") || slices.Contains(names, "ZZ_TEST_LIB") {
				t.Errorf("without the group: asked %v, reads %v", asked, names)
			}
			continue
		}
		if g, ok := GroupOf(fs.Lookup("zz-n")); !ok || g != testGroup {
			t.Errorf("--zz-n's group: %v %v", g, ok)
		}
		if n != 7 || !slices.Equal(names[len(names)-2:], []string{"ZZ_TEST_N", "ZZ_TEST_LIB"}) {
			t.Errorf("with the group: --zz-n %d from the environment, reads %v", n, names)
		}
	}
	if !slices.Contains(Groups(), testReader) {
		t.Error("Groups lacks a registered group")
	}
}
