package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cli"
)

// docCommand is a kvtier command line found in the documentation.
type docCommand struct {
	where string   // file:line
	args  []string // after "kvtier"
}

// TestDocCommandsParse runs every kvtier command line of README.md and
// docs/*.md (in shell and console blocks, and inline code that gives
// flags) through the command's flag parser, without measuring: a renamed
// or removed flag in the documentation, or an old name kept as a
// deprecated alias, fails here. Not parallel: it sets
// cli.ParseOnly, which parallel tests must not see.
func TestDocCommandsParse(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	var cmds []docCommand
	for _, f := range files {
		cmds = append(cmds, docCommands(t, f)...)
	}
	t.Logf("%d command lines", len(cmds))
	if len(cmds) < 20 {
		t.Fatalf("found only %d kvtier command lines in the documentation", len(cmds))
	}
	cli.ParseOnly = cli.StopAfterFlags
	defer func() { cli.ParseOnly = 0 }()
	for _, c := range cmds {
		code, _, stderr := runCLI(t, c.args...)
		if code != exitOK {
			t.Errorf("%s: kvtier %s: exit %d: %s", c.where, strings.Join(c.args, " "), code, stderr)
		}
		// The documentation uses a renamed flag's new name, not its
		// deprecated alias.
		if strings.Contains(stderr, "has been deprecated") {
			t.Errorf("%s: kvtier %s: %s", c.where, strings.Join(c.args, " "), stderr)
		}
	}
}

// TestDocCommandsCatchStaleFlags checks that the parse above would fail on
// a flag no command has.
func TestDocCommandsCatchStaleFlags(t *testing.T) {
	cli.ParseOnly = cli.StopAfterFlags
	defer func() { cli.ParseOnly = 0 }()
	if code, _, _ := runCLI(t, "sweep", "--no-such-flag"); code != exitUsage {
		t.Fatalf("an unknown flag parsed (exit %d)", code)
	}
	if code, _, _ := runCLI(t, "sweep", "--reps", "5"); code != exitOK {
		t.Fatalf("a good flag did not parse (exit %d)", code)
	}
	// Each kvtier command of a list or pipeline is checked: the second
	// of "a && b" was parsed as arguments of the first.
	got := appendCommand(t, nil, "x", "kvtier trace --generate a && kvtier plan --trace a --sim | tee b")
	if len(got) != 2 || got[0].args[0] != "trace" || len(got[0].args) != 3 || got[1].args[0] != "plan" {
		t.Errorf("commands of a list: %v", got)
	}
}

// inlineCommand is inline code that starts with kvtier and gives a flag.
var inlineCommand = regexp.MustCompile("`((?:bin/)?kvtier [a-z0-9]+ [^`]*--[^`]*)`")

// endsInFlag matches inline code that names a flag of a command rather
// than giving a command line: "kvtier trace --generate".
var endsInFlag = regexp.MustCompile(` --[a-z0-9-]+$`)

// docCommands returns the kvtier command lines of the Markdown file path:
// every line of a sh block, the "$ " lines of a console block, joined
// over trailing backslashes; inline code only where it has no
// placeholder syntax ([...], a|b, ...) and does not end in a flag.
func docCommands(t *testing.T, path string) []docCommand {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []docCommand
	fence, pending, start := "", "", 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		where := filepath.Base(path) + ":" + strconv.Itoa(n)
		if strings.HasPrefix(line, "```") {
			switch {
			case fence != "":
				fence = ""
			case line == "```":
				fence = "-" // a block without a language: not shell
			default:
				fence = strings.TrimPrefix(line, "```")
			}
			continue
		}
		switch fence {
		case "":
			for _, m := range inlineCommand.FindAllStringSubmatch(line, -1) {
				if !strings.ContainsAny(m[1], "[|…") && !strings.Contains(m[1], "...") && !endsInFlag.MatchString(m[1]) {
					cmds = appendCommand(t, cmds, where, m[1])
				}
			}
			continue
		case "console":
			if pending == "" && !strings.HasPrefix(line, "$ ") {
				continue
			}
			line = strings.TrimPrefix(line, "$ ")
		case "sh", "bash":
		default:
			continue
		}
		if pending == "" {
			start = n
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			pending += s + " "
			continue
		}
		cmds = appendCommand(t, cmds, filepath.Base(path)+":"+strconv.Itoa(start), pending+line)
		pending = ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// appendCommand appends the kvtier commands in the shell line s, one per
// command of a list or pipeline (a && b, a | b, a; b).
func appendCommand(t *testing.T, cmds []docCommand, where, s string) []docCommand {
	t.Helper()
	words, ok := shellWords(s)
	if !ok {
		t.Errorf("%s: cannot split %q", where, s)
		return cmds
	}
	for len(words) > 0 {
		end := slices.IndexFunc(words, func(w string) bool { return w == "&&" || w == "||" || w == "|" || w == ";" })
		if end < 0 {
			end = len(words)
		}
		cmds = appendKvtier(cmds, where, words[:end])
		words = words[min(end+1, len(words)):]
	}
	return cmds
}

// appendKvtier appends the kvtier command in the simple command words,
// if any.
func appendKvtier(cmds []docCommand, where string, words []string) []docCommand {
	for i, w := range words {
		// ./cmd/kvtier is the package (go install ./cmd/kvtier), not the binary.
		if (w == "kvtier" || strings.HasSuffix(w, "/kvtier")) && !strings.Contains(w, "=") && !strings.HasPrefix(w, "./cmd/") {
			return append(cmds, docCommand{where, words[i+1:]})
		}
	}
	return cmds
}

// shellWords splits s as a POSIX shell splits words, enough for the
// documentation: quotes, backslashes, and a comment from an unquoted #
// at the start of a word.
func shellWords(s string) ([]string, bool) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words, true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, false
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, true
}
