package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// ParseOnly, set by tests, stops every command before it opens,
// measures or writes anything, with ExitOK: at StopAfterFlags once the
// flags have parsed (the check of the documentation's command lines), at
// StopAfterOptions once they are resolved into options as well (the
// check of every value the flags' help names).
var ParseOnly int

// Levels of ParseOnly.
const (
	StopAfterFlags   = 1
	StopAfterOptions = 2
)

// NewFlagSet returns the flag set of the command called name: errors and
// -h go to stderr, -h printing usage (its first lines) and the flags.
func NewFlagSet(name, usage string, stderr io.Writer) *pflag.FlagSet {
	return newFlagSet(name, usage, stderr, nil, nil)
}

// newFlagSet is NewFlagSet for a command that reads the variables own
// besides the shared ones: -h lists the flags under their headings, fits
// its lines to HelpWidth and ends with every variable it reads.
func newFlagSet(name, usage string, stderr io.Writer, own []EnvVar, getenv func(string) string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		printHelp(stderr, fs, usage, EnvOf(fs, own), HelpWidth(getenv, stderr))
	}
	return fs
}

// FlagSet returns the call's flag set, named after its command, -h
// printing the command's Usage, flags and environment.
func (c *Call) FlagSet() *pflag.FlagSet {
	return newFlagSet(c.Name, c.Usage, c.Stderr, c.Env, c.Getenv)
}

// ParseFlags parses args into fs, a command's flag set named after the
// command; getenv reads the environment variables that stand for the
// flags of the groups fs binds (FlagGroup.FromEnv), and no other.
// ok is false when the command must return code at once: ExitOK after
// -h/--help (pflag has printed the usage), ExitUsage after a bad flag
// (one line on stderr). Positional arguments are left in fs.Args().
func ParseFlags(fs *pflag.FlagSet, args []string, stderr io.Writer, getenv func(string) string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitOK, false
		}
		return UsageErr(stderr, fs.Name(), suggestFlag(fs, err)), false
	}
	if err := checkAliases(fs); err != nil {
		return UsageErr(stderr, fs.Name(), err), false
	}
	if err := fromEnv(fs, getenv); err != nil {
		return UsageErr(stderr, fs.Name(), err), false
	}
	if ParseOnly == StopAfterFlags {
		return ExitOK, false
	}
	return ExitOK, true
}

// ParseFlags is ParseFlags of the call's arguments and environment.
func (c *Call) ParseFlags(fs *pflag.FlagSet) (code int, ok bool) {
	return ParseFlags(fs, c.Args, c.Stderr, c.Getenv)
}

// suggestFlag adds the nearest flag's name to pflag's "unknown flag:
// --name" error.
func suggestFlag(fs *pflag.FlagSet, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	// A deprecated alias is matched too, and its new name suggested:
	// --endpiont is a misspelt --endpoint, which is --base-url now.
	var names []string
	target := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		if alias := f.Annotations[AliasOf]; len(alias) == 1 {
			target[f.Name] = alias[0] // hidden, as pflag hides a deprecated flag
		} else if f.Hidden || f.Deprecated != "" {
			return
		}
		names = append(names, f.Name)
	})
	best := nearest(name, names)
	if best == "" {
		return err
	}
	return fmt.Errorf(`%w (did you mean "--%s"?)`, err, cmp.Or(target[best], best))
}

// ParseNoArgs is ParseFlags for a command that takes no positional
// arguments: the first one is bad input.
func ParseNoArgs(fs *pflag.FlagSet, args []string, stderr io.Writer, getenv func(string) string) (code int, ok bool) {
	if code, ok := ParseFlags(fs, args, stderr, getenv); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		return UsageErr(stderr, fs.Name(), fmt.Errorf("unexpected argument %q", fs.Arg(0))), false
	}
	return ExitOK, true
}

// ParseNoArgs is ParseNoArgs of the call's arguments and environment.
func (c *Call) ParseNoArgs(fs *pflag.FlagSet) (code int, ok bool) {
	return ParseNoArgs(fs, c.Args, c.Stderr, c.Getenv)
}

// ParseOptions parses args (no positional ones) into fs and resolves
// the command's options with resolve, reporting bad input as UsageErr
// does. ok is false when the command must return code at once.
func ParseOptions[T any](fs *pflag.FlagSet, args []string, stderr io.Writer, getenv func(string) string, resolve func() (T, error)) (opts T, code int, ok bool) {
	if code, ok := ParseNoArgs(fs, args, stderr, getenv); !ok {
		return opts, code, false
	}
	opts, err := resolve()
	if err != nil {
		return opts, UsageErr(stderr, fs.Name(), err), false
	}
	if ParseOnly == StopAfterOptions {
		return opts, ExitOK, false
	}
	return opts, ExitOK, true
}

// Options are a command's flags bound into a struct: Bind adds them to
// the command's flag set, Resolve turns what was given into the
// command's options O, reporting every problem at once.
type Options[O any] interface {
	Bind(fs *pflag.FlagSet, c *Call)
	Resolve() (O, error)
}

// Parse binds f's flags to the call's flag set, parses the call's
// arguments (no positional ones) and resolves them into options. ok is
// false when the command must return code at once.
func Parse[O any](c *Call, f Options[O]) (opts O, code int, ok bool) {
	fs := c.FlagSet()
	f.Bind(fs, c)
	return ParseOptions(fs, c.Args, c.Stderr, c.Getenv, f.Resolve)
}

// Bound makes a command's Run from run, which takes the command's flags
// F (a pointer to T, bound and resolved by Parse into options O): the
// flags are parsed before run is called, and bad input or -h ends the
// command with their exit status without calling it.
func Bound[O any, F interface {
	*T
	Options[O]
}, T any](run func(ctx context.Context, c *Call, f F, opts O) int) func(context.Context, *Call) int {
	return func(ctx context.Context, c *Call) int {
		f := F(new(T))
		opts, code, ok := Parse[O](c, f)
		if !ok {
			return code
		}
		return run(ctx, c, f, opts)
	}
}
