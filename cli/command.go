// Package cli is kvtier's command line below the driver: the spec of a
// command and the registry the commands add themselves to, parsing and
// binding of flags into options, the exit statuses and the suggestions
// of a mistyped name, the flag groups every measuring command shares
// (output, sampling, model: one flag name, one meaning) and the
// FlagGroup the others are declared with beside their concern
// (tiers/tierflag, peer/peerflag, serving/servingflag), and the run
// lifecycle of a measuring command. The lifecycle draws figures and
// collects the machine's facts through the hooks the driver puts in a
// Call, so cli links no device, verbs or plotting code, and neither does
// a suite that moves no device bytes.
//
// A suite's command lives in the suite's package (harness/sweep's
// command.go) and registers as the package initializes (var Command =
// cli.Register(...)); cmd/kvtier imports the suites for their
// registrations and dispatches over the registry.
package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/registry"
	"github.com/kvtier/kvtier/results"
)

// Exit statuses: one table for every command (README "Exit status").
const (
	ExitOK          = 0   // every row ok or skipped
	ExitFail        = 1   // some rows are errors, or a write failed
	ExitUsage       = 2   // bad input, or nothing could start; one line on stderr
	ExitInterrupted = 130 // SIGINT, SIGTERM, SIGHUP or a broken pipe; rows measured so far are kept
)

// A Command is one kvtier subcommand.
type Command struct {
	Name    string // what follows kvtier on the command line, e.g. "sweep"
	Summary string // its line in kvtier help
	Order   int    // its place in kvtier help, ascending
	// Usage is what -h prints above the flags: "Usage: kvtier NAME
	// [flags]" and a paragraph.
	Usage string
	// ScriptEnv are the environment variables scripts/bench.sh and go
	// test ./bench read for this command that the binary does not, each
	// with the flag that says the same to the binary.
	ScriptEnv []EnvFlag
	// Env are the environment variables this command reads besides those
	// of the shared flags and libraries (EnvOf): its -h lists them and
	// its manifest records them.
	Env []EnvVar
	// Run runs the command and returns its exit status. Its context is
	// cancelled on SIGINT, SIGTERM or SIGHUP, after which a command stops
	// measuring and keeps what it has written.
	Run func(ctx context.Context, c *Call) int
}

// An EnvFlag pairs an environment variable with the flag that stands
// for it.
type EnvFlag struct{ Env, Flag string }

// A Call is one invocation of a command.
type Call struct {
	*Command
	Args           []string  // the command line after the command's name
	Stdin          io.Reader // what a command that reads input reads ("-")
	Stdout, Stderr io.Writer
	// Getenv reads the environment: the driver passes os.Getenv, tests
	// their own. Nothing below the driver reads the environment itself.
	Getenv func(string) string
	// Facts adds this machine's facts (host, CPU, GPUs, NICs, libraries)
	// to a run's manifest, returning what it could not find out: the
	// driver passes package system's collectors, so that cli, and the
	// suites that move no device bytes, link none of them. Nil adds none.
	Facts harness.Collector
	// FinishFacts re-reads, at the end of a run, the facts that change
	// over it (the GPUs' PCIe links under load, throttle reasons, PCIe
	// replays) into its manifest: the driver passes package system's.
	// Nil re-reads none.
	FinishFacts func(m *results.Manifest)
	// Figures draws the figures of the results directory dir and returns
	// the files it wrote: the driver passes package plots' drawers. Nil
	// draws none.
	Figures func(dir string) ([]string, error)
}

// CommandLine is the command line the call records in a manifest: kvtier,
// the command's name and its arguments.
func (c *Call) CommandLine() []string {
	return append([]string{"kvtier", c.Name}, c.Args...)
}

// Manifest returns the first manifest of a run of suite by the call: what
// the run lifecycle writes (SuiteRun), for a process that reports its
// facts to another instead (a rank of kvtier mesh). What the machine's
// facts could not say is in its warnings, not on stderr.
func (c *Call) Manifest(suite string) *results.Manifest {
	return harness.NewManifest(suite, c.CommandLine(), c.Facts, nil)
}

var commands = registry.New("command", func(c *Command) string { return c.Name },
	func(a, b *Command) int { return cmp.Compare(a.Order, b.Order) })

// Register adds a command and returns it; a suite's package calls it
// once, when it initializes (var Command = cli.Register(...)). A name
// registered twice is a programming error and panics.
func Register(c *Command) *Command {
	commands.Add(c)
	return c
}

// Commands returns every registered command in help order.
func Commands() []*Command { return commands.All() }

// Lookup returns the command registered as name.
func Lookup(name string) (*Command, bool) { return commands.Lookup(name) }

// UsageErr prints one line naming the command and the problem, with
// every option.Error as "--field: problem", and returns ExitUsage. Every
// bad-input path of every command ends here.
func UsageErr(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "kvtier %s: %s\n", cmd, option.Render(err, func(f string) string { return "--" + f }))
	return ExitUsage
}

// UsageErr is UsageErr for the call's command.
func (c *Call) UsageErr(err error) int { return UsageErr(c.Stderr, c.Name, err) }

// Logf prints one line on stderr headed by the command's name.
func (c *Call) Logf(format string, args ...any) {
	fmt.Fprintf(c.Stderr, "kvtier %s: %s\n", c.Name, fmt.Sprintf(format, args...))
}

// DidYouMean returns ` (did you mean "x"?)` for the candidate nearest to
// s by edit distance, when it is near enough to be a typo (nearest);
// else "".
func DidYouMean(s string, candidates []string) string {
	best := nearest(s, candidates)
	if best == "" {
		return ""
	}
	return ` (did you mean "` + best + `"?)`
}

// nearest returns the candidate nearest s: within an edit distance of 2
// (a transposition, as in endpiont, is 2), or of a third of s for a
// longer name; "" when none is.
func nearest(s string, candidates []string) string {
	best, bestD := "", max(2, len(s)/3)+1
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
