package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cli"
)

// helpFlag is one flag as a command's -h prints it.
type helpFlag struct{ name, usage string }

// flagLine is a line of pflag's PrintDefaults: "  -o, --out string   usage".
var flagLine = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)(?:\[=[^\]]*\])?(?: \w+)?\s{2,}(.*)$`)

// helpFlags returns the flags kvtier cmd -h lists.
func helpFlags(t *testing.T, cmd string) []helpFlag {
	t.Helper()
	code, _, stderr := runCLI(t, cmd, "-h")
	if code != exitOK {
		t.Fatalf("kvtier %s -h: exit %d", cmd, code)
	}
	var flags []helpFlag
	cont := false // the line may continue the last flag's usage (wrapped to the width)
	for _, l := range strings.Split(stderr, "\n") {
		if m := flagLine.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[2], "deprecated") {
			flags = append(flags, helpFlag{m[1], m[2]})
			cont = true
			continue
		}
		if cont && strings.HasPrefix(l, "   ") && strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "-") {
			flags[len(flags)-1].usage += " " + strings.TrimSpace(l)
			continue
		}
		cont = false
	}
	return flags
}

// documentedValue matches a value a flag's help says it takes: "0: none",
// "inf: unbounded", "e.g. 30s".
var documentedValue = regexp.MustCompile(`(?:^|[(;,] )(0|inf|-1): |e\.g\. ([^\s,;)]+)`)

// TestDocumentedValuesParse takes every value a flag's help documents
// ("0: back to back", "inf: unbounded", "e.g. http://127.0.0.1:8000") and
// runs the command's parser and option checks on it, without measuring:
// a documented value that is refused fails here. Before, replay --think 0
// and --arrival-window 0 were refused though their help said "0: back to
// back". Not parallel: it sets cli.ParseOnly.
func TestDocumentedValuesParse(t *testing.T) {
	// The commands that resolve their options before opening anything
	// (parseOptions), each with the flags that make the rest valid.
	base := map[string][]string{
		"geometry":  nil,
		"sweep":     {"--out", t.TempDir()},
		"transfer":  {"--out", t.TempDir()},
		"probe":     {"--sim", "--out", t.TempDir()},
		"interfere": {"--sim", "--out", t.TempDir()},
		"replay":    {"--base-url", "http://127.0.0.1:8000", "--out", t.TempDir()},
		"knee":      {"--out", t.TempDir()},
		"sim":       nil,
		"mesh":      {"--out", t.TempDir(), "--rank", "0", "--world-size", "1", "--coordinator", "127.0.0.1:29500", "--token", "t"},
	}
	defer func() { cli.ParseOnly = 0 }()
	n := 0
	for cmd, args := range base {
		// replay's options reach the server (its model, a warm-up): its
		// values go through the flag parser only.
		cli.ParseOnly = map[bool]int{true: cli.StopAfterFlags, false: cli.StopAfterOptions}[cmd == "replay"]
		for _, f := range helpFlags(t, cmd) {
			for _, m := range documentedValue.FindAllStringSubmatch(f.usage, -1) {
				v := m[1] + m[2]
				n++
				args := args
				if f.name == "base-url" {
					args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--sim" })
				}
				if f.name == "ib-tc" || f.name == "ib-sl" { // the QPs' QoS: tcp has none
					args = append(slices.Clone(args), "--transport", "verbs")
				}
				all := append(append([]string{cmd}, args...), "--"+f.name, v)
				if code, _, stderr := runCLI(t, all...); code != exitOK {
					t.Errorf("kvtier %s --%s %s (documented: %q): exit %d: %s", cmd, f.name, v, f.usage, code, stderr)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d documented values found", n)
	}
}
