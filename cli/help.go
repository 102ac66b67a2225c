package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
)

// HeadingAnnotation annotates a command's own flags that belong to one
// concern but to no shared group (a tier's options in kvtier sweep) with
// the heading they are listed under in -h.
const HeadingAnnotation = "kvtier-heading"

// UnderHeading calls add, which adds flags to fs, and lists the flags it
// added under heading in -h (e.g. "Disk tier"), after the command's other
// own flags and before the shared groups.
func UnderHeading(fs *pflag.FlagSet, heading string, add func(fs *pflag.FlagSet)) {
	had := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { had[f.Name] = true })
	add(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if !had[f.Name] {
			fs.SetAnnotation(f.Name, HeadingAnnotation, []string{heading})
		}
	})
}

// DefaultWidth is the width help is fitted to where neither COLUMNS nor
// a terminal says.
const DefaultWidth = 80

// EnvColumns is the variable that sets the width of -h.
const EnvColumns = "COLUMNS"

// helpGroup declares COLUMNS, which every command's -h reads. It binds no
// flag, so no command lists it among what it reads for a run, and no
// manifest records it.
var helpGroup = NewGroup(FlagGroup{Name: "help", Heading: "Help", Order: 1,
	Env: []EnvVar{{Name: EnvColumns, Meaning: "the width -h fits its lines to (default: the terminal's, else 80)"}}})

// HelpWidth is the width -h fits its lines to: COLUMNS when it is set (as
// getenv reads it), else the width of the terminal out is, else
// DefaultWidth.
func HelpWidth(getenv func(string) string, out io.Writer) int {
	if getenv != nil {
		if n, err := strconv.Atoi(strings.TrimSpace(getenv(EnvColumns))); err == nil && n > 0 {
			return max(n, 40)
		}
	}
	if f, ok := out.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return max(int(ws.Col), 40)
		}
	}
	return DefaultWidth
}

// A section is the flags listed under one heading.
type section struct {
	heading string
	flags   *pflag.FlagSet
}

// helpSections splits fs's flags by heading: the command's own first
// ("Flags"), then those a command put under a heading of their own
// (UnderHeading) in the order they were added, then every shared group's
// (FlagGroup.Heading) in the groups' order, the same in every command.
func helpSections(fs *pflag.FlagSet) []section {
	byHeading := map[string]*pflag.FlagSet{}
	var own []string
	fs.VisitAll(func(f *pflag.Flag) {
		h := "Flags"
		if g, ok := GroupOf(f); ok {
			h = g.Heading
		} else if a := f.Annotations[HeadingAnnotation]; len(a) == 1 {
			h = a[0]
			if byHeading[h] == nil {
				own = append(own, h)
			}
		}
		if byHeading[h] == nil {
			byHeading[h] = pflag.NewFlagSet(h, pflag.ContinueOnError)
			byHeading[h].SortFlags = false
		}
		byHeading[h].AddFlag(f)
	})
	order := append([]string{"Flags"}, own...)
	for _, g := range Groups() {
		order = append(order, g.Heading)
	}
	var out []section
	seen := map[string]bool{}
	for _, h := range order {
		if set := byHeading[h]; set != nil && !seen[h] {
			seen[h] = true
			out = append(out, section{h, set})
		}
	}
	return out
}

// printHelp writes a command's -h: its usage text, its flags under their
// headings (a line at column 0 ending in ':'), and the environment it
// reads, every line fitted to width.
func printHelp(w io.Writer, fs *pflag.FlagSet, usage string, env []EnvVar, width int) {
	if rest, ok := strings.CutPrefix(usage, "usage:"); ok {
		usage = "Usage:" + rest // one capitalisation in every command
	}
	fmt.Fprintln(w, Wrap(usage, width))
	for _, s := range helpSections(fs) {
		fmt.Fprintf(w, "\n%s:\n%s", s.heading, s.flags.FlagUsagesWrapped(width-1))
	}
	var b strings.Builder
	PrintEnv(&b, env)
	io.WriteString(w, Wrap(b.String(), width))
}

// Wrap fits text to width columns, breaking at spaces: the lines of a
// paragraph at column 0 are joined and filled again (usage text is
// written with line breaks for 80 columns), a line ending in ':' being a
// heading only where no paragraph is open; an indented line (an example,
// a list) is wrapped on its own, continued under its text: after a
// two-space gap ("  NAME   meaning") or a "- ", else at its indentation.
// A word longer than the line stays whole.
func Wrap(text string, width int) string {
	var out []string
	var para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, wrapLine(strings.Join(para, " "), width)...)
			para = nil
		}
	}
	for _, l := range strings.Split(text, "\n") {
		heading := len(para) == 0 && strings.HasSuffix(l, ":") // within a paragraph, a ':' ends a clause
		if l == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "Usage:") || heading {
			flush()
			if l == "" || strings.HasPrefix(l, " ") || heading {
				out = append(out, wrapLine(l, width)...)
				continue
			}
		}
		para = append(para, l)
	}
	flush()
	return strings.Join(out, "\n")
}

// hangOf is the column a wrapped line continues at.
func hangOf(l string) int {
	indent := len(l) - len(strings.TrimLeft(l, " "))
	rest := l[indent:]
	if strings.HasPrefix(rest, "Usage: ") {
		return indent + len("Usage: ")
	}
	if strings.HasPrefix(rest, "- ") {
		return indent + 2
	}
	if i := strings.Index(rest, "  "); i > 0 {
		gap := len(rest[i:]) - len(strings.TrimLeft(rest[i:], " "))
		return indent + i + gap
	}
	return indent
}

func wrapLine(l string, width int) []string {
	if len([]rune(l)) <= width {
		return []string{l}
	}
	indent, hang := len(l)-len(strings.TrimLeft(l, " ")), min(hangOf(l), width/2)
	pad := strings.Repeat(" ", hang)
	// The head (up to the column continued lines hang at) is kept as it
	// is written, its gaps included.
	head := indent
	if hang > indent && strings.TrimSpace(l[:hang]) != "" {
		head = hang
	}
	var out []string
	cur, full := l[:head], head > indent
	for _, word := range strings.Fields(l[head:]) {
		if full && len([]rune(cur))+1+len([]rune(word)) > width {
			out = append(out, cur)
			cur, full = pad, false
		}
		if full && !strings.HasSuffix(cur, " ") {
			cur += " "
		}
		cur += word
		full = true
	}
	return append(out, cur)
}
