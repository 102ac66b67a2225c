package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/units"
)

// AddFields makes a flag of each option field: the field types the
// tiers' options hold (a new one is a programming error, and panics at
// start).
func AddFields(fs *pflag.FlagSet, fields []option.Field) {
	for _, f := range fields {
		switch p := f.Ptr.(type) {
		case *string:
			fs.StringVar(p, f.Name, *p, f.Usage)
		case *int:
			fs.IntVar(p, f.Name, *p, f.Usage)
		case *bool:
			fs.BoolVar(p, f.Name, *p, f.Usage)
		case *time.Duration:
			fs.Var(DurationValue{p}, f.Name, f.Usage)
		default:
			panic(fmt.Sprintf("option %s: unsupported type %T", f.Name, f.Ptr))
		}
	}
}

// Alias adds old as a deprecated name of the flag name: it sets the same
// value and says, once used, to use --name. Renamed flags keep their old
// name this way for one release.
func Alias(fs *pflag.FlagSet, old, name string) {
	f := fs.Lookup(name)
	fs.Var(f.Value, old, "deprecated: use --"+name)
	fs.MarkDeprecated(old, "use --"+name+" instead")
	fs.SetAnnotation(old, AliasOf, []string{name})
}

// FlagChanged reports whether the flag called name was given on the
// command line, under its name or under a deprecated alias of it (see
// Alias): pflag's Changed sees only the name given.
func FlagChanged(fs *pflag.FlagSet, name string) bool {
	found := fs.Changed(name)
	fs.Visit(func(f *pflag.Flag) {
		if names := f.Annotations[AliasOf]; len(names) == 1 && names[0] == name {
			found = true
		}
	})
	return found
}

// AliasOf annotates a deprecated flag with the name of the flag it stands
// for.
const AliasOf = "kvtier-alias-of"

// checkAliases reports a deprecated flag given together with the flag it
// stands for: one would silently win over the other.
func checkAliases(fs *pflag.FlagSet) error {
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		if names := f.Annotations[AliasOf]; len(names) == 1 && fs.Changed(names[0]) {
			errs = append(errs, option.Errorf(names[0], "given with --%s, its old name: give one of them", f.Name))
		}
	})
	return errors.Join(errs...)
}

// ListFlag parses the comma-separated value of the flag called name with
// parse. A value that does not parse adds an option.Error to errs and
// yields fallback, a valid placeholder, so that the options' Validate
// does not report the same flag a second time. A value given twice
// ("--prefix 1k,1024") is refused the same way: it would be measured
// twice.
func ListFlag[T comparable](errs *[]error, name, value string, parse func(string) (T, error), fallback ...T) []T {
	v, err := units.ParseList(value, parse)
	if err == nil {
		err = duplicate(v, strings.Split(value, ","))
	}
	if err != nil {
		*errs = append(*errs, option.Wrap(name, err))
		return fallback
	}
	return v
}

// Trimmed is the parse function of a list of names for ListFlag: each
// element with its surrounding spaces removed.
func Trimmed(s string) (string, error) { return strings.TrimSpace(s), nil }

// duplicate reports the first of values (parsed from texts, one each)
// equal to an earlier one; nil when all differ.
func duplicate[T comparable](values []T, texts []string) error {
	first := map[T]string{}
	for i, v := range values {
		text := strings.TrimSpace(texts[i])
		switch was, ok := first[v]; {
		case ok && was == text:
			return fmt.Errorf("%q is given twice: give each value once", text)
		case ok:
			return fmt.Errorf("%q is the same as %q: give each value once", text, was)
		}
		first[v] = text
	}
	return nil
}

// SizeFlag parses the size flag called name, from 1 byte to limit; a
// value that does not parse or is out of range adds an option.Error to
// errs and yields 0.
func SizeFlag(errs *[]error, name, value string, limit int64) int64 {
	n, err := units.ParseBytes(value)
	if err == nil && n > limit {
		err = fmt.Errorf("want 1 byte to %s, got %q", units.FormatBytes(limit), value)
	}
	if err != nil {
		*errs = append(*errs, option.Wrap(name, err))
		return 0
	}
	return n
}

// maxDuration bounds every duration flag: a week.
const maxDuration = 7 * 24 * time.Hour

// ParseDuration reads a duration ("30s", "2m") or plain seconds ("30"),
// positive and at most a week.
func ParseDuration(s string) (time.Duration, error) {
	var d time.Duration
	if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		if math.IsNaN(v) || v <= 0 || v > maxDuration.Seconds() {
			return 0, fmt.Errorf("want a positive duration up to %s, got %q", maxDuration, s)
		}
		d = time.Duration(v * float64(time.Second))
	} else if d, err = time.ParseDuration(strings.TrimSpace(s)); err != nil {
		return 0, fmt.Errorf("%q is not a duration (want e.g. 30s, 2m, 30)", s)
	}
	if d <= 0 || d > maxDuration {
		return 0, fmt.Errorf("want a positive duration up to %s, got %q", maxDuration, s)
	}
	return d, nil
}

// A DurationValue is a duration flag read by ParseDuration ("30s", "2m"
// or plain seconds, positive, at most a week), as every duration flag of
// kvtier is.
type DurationValue struct{ D *time.Duration }

func (v DurationValue) String() string {
	if v.D == nil {
		return ""
	}
	return v.D.String()
}

// Set parses s with ParseDuration.
func (v DurationValue) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*v.D = d
	return nil
}

// Type names the flag's values in -h.
func (v DurationValue) Type() string { return "duration" }

// A ZeroDurationValue is a duration flag that also takes 0 ("0", "0s"),
// for the durations whose help gives 0 a meaning ("0: back to back").
type ZeroDurationValue struct{ D *time.Duration }

func (v ZeroDurationValue) String() string { return DurationValue(v).String() }

// Set takes 0, or what DurationValue takes.
func (v ZeroDurationValue) Set(s string) error {
	if d, err := time.ParseDuration(strings.TrimSpace(s)); err == nil && d == 0 {
		*v.D = 0
		return nil
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && f == 0 {
		*v.D = 0
		return nil
	}
	return DurationValue(v).Set(s)
}

// Type names the flag's values in -h.
func (v ZeroDurationValue) Type() string { return "duration" }

// The one meaning of --idle-timeout, in every command that has it: the
// serving client's and the simulator's, and the peer's (package peer's
// DefaultIdleTimeout and IdleTimeoutUsage say the same, and a test holds
// them to it).
const (
	DefaultIdleTimeout = 30 * time.Second
	IdleTimeoutUsage   = "a peer, server or client that moves no data for this long is gone: its request, read or session fails (an error row where it measured)"
)

// AddIdleTimeout adds --idle-timeout, the idle timeout of a command's
// network operations, into p (default DefaultIdleTimeout).
func AddIdleTimeout(fs *pflag.FlagSet, p *time.Duration) {
	*p = DefaultIdleTimeout
	fs.Var(DurationValue{p}, "idle-timeout", IdleTimeoutUsage)
}
