package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/option"
)

// countFlags are a command's flags for the tests: --n, resolved into
// its value, at least 1.
type countFlags struct{ n int }

func (f *countFlags) Bind(fs *pflag.FlagSet, _ *Call) { fs.IntVar(&f.n, "n", 1, "a count") }

func (f *countFlags) Resolve() (int, error) { return f.n, option.Range("n", f.n, 1, 10) }

// TestBound: a Bound command's run gets the resolved options; -h, an
// unknown flag, a bad value and a positional argument end it first with
// the table's exit status and one line naming the command and the flag.
func TestBound(t *testing.T) {
	t.Parallel()
	var got int
	run := Bound(func(_ context.Context, _ *Call, _ *countFlags, n int) int { got = n; return ExitOK })
	for _, tc := range []struct {
		args   []string
		code   int
		got    int
		stderr string
	}{
		{[]string{"--n", "3"}, ExitOK, 3, ""},
		{[]string{"-h"}, ExitOK, 0, "Usage: kvtier count"},
		{[]string{"--m", "3"}, ExitUsage, 0, `kvtier count: unknown flag: --m (did you mean "--n"?)`},
		{[]string{"--n", "11"}, ExitUsage, 0, "kvtier count: --n: want 1 to 10"},
		{[]string{"x"}, ExitUsage, 0, `kvtier count: unexpected argument "x"`},
	} {
		got = 0
		var stderr bytes.Buffer
		c := &Call{Command: &Command{Name: "count", Usage: "Usage: kvtier count [--n N]"}, Args: tc.args, Stderr: &stderr, Getenv: func(string) string { return "" }}
		if code := run(context.Background(), c); code != tc.code || got != tc.got || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("count %v: exit %d, ran with %d, stderr %q", tc.args, code, got, stderr.String())
		}
	}
}

// TestRegister: commands are listed in help order and found by name; a
// name registered twice panics.
func TestRegister(t *testing.T) {
	t.Parallel()
	Register(&Command{Name: "zz-test-b", Order: -1})
	Register(&Command{Name: "zz-test-a", Order: -2})
	all := Commands()
	if len(all) < 2 || all[0].Name != "zz-test-a" || all[1].Name != "zz-test-b" {
		t.Errorf("order: %v", all)
	}
	if _, ok := Lookup("zz-test-b"); !ok {
		t.Error("zz-test-b not found")
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("a second zz-test-a did not panic")
		}
	}()
	Register(&Command{Name: "zz-test-a"})
}
