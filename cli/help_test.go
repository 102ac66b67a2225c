package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestWrap(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"short", 40, "short"},
		{"one two three four", 9, "one two\nthree\nfour"},
		// A paragraph written for another width is filled again.
		{"aaa bbb\nccc ddd", 40, "aaa bbb ccc ddd"},
		// An indented line continues under its text, a list item after "- ".
		{"  NAME   the meaning of it", 20, "  NAME   the meaning\n         of it"},
		{"- one two three", 9, "- one two\n  three"},
		{"Usage: kvtier x [--flag A] [--other B]", 24, "Usage: kvtier x [--flag\n       A] [--other B]"},
		// A word longer than the line stays whole.
		{"a verylongword", 5, "a\nverylongword"},
		{"Heading:\nnext", 40, "Heading:\nnext"},
		// A line ending in ':' within a paragraph is no heading.
		{"costs from\nRESULTS_DIR (a sweep:\nfitted α", 50, "costs from RESULTS_DIR (a sweep: fitted α"},
		{"text\n\nHeading:\nnext", 40, "text\n\nHeading:\nnext"},
	} {
		if got := Wrap(c.in, c.width); got != c.want {
			t.Errorf("Wrap(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}

// The flags are listed under headings: the command's own first, then
// those under a heading of their own, then the shared groups in order.
func TestHelpSections(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	var s string
	PolicyGroup.Bind(fs, func(fs *pflag.FlagSet) { fs.StringVar(&s, "p", "", "policy") })
	OutputGroup.Bind(fs, func(fs *pflag.FlagSet) { fs.StringVar(&s, "o", "", "output") })
	fs.StringVar(&s, "own", "", "own")
	UnderHeading(fs, "Disk tier", func(fs *pflag.FlagSet) { fs.StringVar(&s, "disk", "", "disk") })
	var got []string
	for _, sec := range helpSections(fs) {
		got = append(got, sec.heading)
	}
	if want := "Flags,Disk tier,Output,Sampling"; strings.Join(got, ",") != want {
		t.Errorf("sections %v, want %s", got, want)
	}
	var b strings.Builder
	printHelp(&b, fs, "usage: kvtier x", nil, 30)
	for _, l := range strings.Split(b.String(), "\n") {
		if len([]rune(l)) > 30 {
			t.Errorf("line wider than 30: %q", l)
		}
	}
	if !strings.HasPrefix(b.String(), "Usage: kvtier x\n") || !strings.Contains(b.String(), "\nDisk tier:\n") {
		t.Errorf("help:\n%s", b.String())
	}
}

func TestHelpWidth(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvColumns {
				return v
			}
			return ""
		}
	}
	if w := HelpWidth(env("100"), &strings.Builder{}); w != 100 {
		t.Errorf("COLUMNS=100: %d", w)
	}
	if w := HelpWidth(env(""), &strings.Builder{}); w != DefaultWidth {
		t.Errorf("no COLUMNS, no terminal: %d", w)
	}
	if w := HelpWidth(env("x"), &strings.Builder{}); w != DefaultWidth {
		t.Errorf("COLUMNS=x: %d", w)
	}
}

// Every misspelt flag within two edits gets a suggestion, a deprecated
// alias's new name where the alias is nearest.
func TestSuggestFlag(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("probe", pflag.ContinueOnError)
	var s string
	fs.StringVar(&s, "base-url", "", "")
	Alias(fs, "endpoint", "base-url")
	fs.StringVar(&s, "tp", "", "")
	for in, want := range map[string]string{
		"endpiont": `(did you mean "--base-url"?)`,
		"base-ulr": `(did you mean "--base-url"?)`,
		"tq":       `(did you mean "--tp"?)`,
	} {
		err := suggestFlag(fs, fs.Parse([]string{"--" + in}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--%s: %v, want %s", in, err, want)
		}
	}
}
