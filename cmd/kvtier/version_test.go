package main

import (
	"strings"
	"testing"
)

// TestVersionAndSuggestions: kvtier version and --version print the
// module version; an unknown command or flag names the nearest one
// (before, "kvtier swep" suggested nothing and there was no version).
func TestVersionAndSuggestions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"version"}, exitOK, "kvtier "},
		{[]string{"--version"}, exitOK, "kvtier "},
		{[]string{"swep"}, exitUsage, `unknown command "swep" (did you mean "sweep"?)`},
		{[]string{"trnasfer"}, exitUsage, `(did you mean "transfer"?)`},
		{[]string{"zzzzzz"}, exitUsage, `unknown command "zzzzzz" (run kvtier help)`},
		{[]string{"sweep", "--repz", "3"}, exitUsage, `unknown flag: --repz (did you mean "--reps"?)`},
		{[]string{"probe", "--prefixes", "1k"}, exitUsage, `(did you mean "--prefix"?)`},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("kvtier %s: exit %d, %q%q; want exit %d and %q", strings.Join(c.args, " "), code, stdout, stderr, c.code, c.want)
		}
		if code == exitUsage && strings.Count(stderr, "\n") != 1 {
			t.Errorf("kvtier %s: want one line, got %q", strings.Join(c.args, " "), stderr)
		}
	}
}
