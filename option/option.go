// Package option holds what the options of every layer share: errors that
// name the option at fault, and fields a package declares for the command
// line without speaking of flags. A library's Validate returns Errors
// naming its fields ("reps", "peer"); only cmd/kvtier turns a field into a
// flag ("--reps") and prints it. It is a leaf: it imports nothing else
// from kvtier.
package option

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// An Error is a problem with one option.
type Error struct {
	Field string // the option's name, e.g. "block-size"
	Err   error
}

func (e *Error) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the underlying problem.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error for field with a formatted message.
func Errorf(field, format string, args ...any) error {
	return &Error{Field: field, Err: fmt.Errorf(format, args...)}
}

// Wrap returns err as an *Error for field; nil stays nil.
func Wrap(field string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Field: field, Err: err}
}

// Range returns nil when lo <= v <= hi, else an *Error for field: "want
// LO to HI, got V", then the hint in parentheses where one is given (what
// a value outside the range means, e.g. "0: the format's"). NaN is in no
// range.
func Range[T cmp.Ordered](field string, v, lo, hi T, hint ...string) error {
	if v >= lo && v <= hi {
		return nil
	}
	return outside(field, "want "+number(lo)+" to "+number(hi), v, hint)
}

// Positive returns nil when v > 0, else an *Error for field: "want more
// than 0, got V".
func Positive[T cmp.Ordered](field string, v T, hint ...string) error {
	var zero T
	if v > zero {
		return nil
	}
	return outside(field, "want more than 0", v, hint)
}

// NotNegative returns nil when v >= 0, else an *Error for field: "want
// 0 or more, got V".
func NotNegative[T cmp.Ordered](field string, v T, hint ...string) error {
	var zero T
	if v >= zero {
		return nil
	}
	return outside(field, "want 0 or more", v, hint)
}

func outside[T cmp.Ordered](field, want string, got T, hint []string) error {
	msg := want + ", got " + number(got)
	if len(hint) > 0 {
		msg += " (" + strings.Join(hint, "; ") + ")"
	}
	return Errorf(field, "%s", msg)
}

// number formats a bound or a value: floats without an exponent where
// they are finite and below 10^15 (1000000, not 1e+06).
func number[T cmp.Ordered](v T) string {
	if f, ok := any(v).(float64); ok && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// Fields returns every field named by the *Errors inside err (joined
// errors included), in order, each once.
func Fields(err error) []string {
	var out []string
	walk(err, func(e *Error) {
		if slices.Contains(out, e.Field) {
			return
		}
		out = append(out, e.Field)
	})
	return out
}

func walk(err error, f func(*Error)) {
	if err == nil {
		return
	}
	if e, ok := err.(*Error); ok {
		f(e)
		return
	}
	switch x := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range x.Unwrap() {
			walk(e, f)
		}
	case interface{ Unwrap() error }:
		walk(x.Unwrap(), f)
	}
}

// Render rewrites every *Error inside err with name(field) in place of the
// field, joining the problems with "; ", one line, and saying each option's
// problem once (saidOf). cmd/kvtier passes a name
// that makes "--field" of it.
func Render(err error, name func(field string) string) string {
	var parts []string
	var render func(error)
	render = func(err error) {
		if subs := joined(err); subs != nil {
			for _, sub := range subs {
				render(sub)
			}
			return
		}
		if e, ok := err.(*Error); ok {
			if n := name(e.Field); !saidOf(parts, n) {
				parts = append(parts, n+": "+oneLine(e.Err.Error()))
			}
			return
		}
		parts = append(parts, oneLine(err.Error()))
	}
	if err != nil {
		render(err)
	}
	return strings.Join(parts, "; ")
}

// saidOf reports whether a part already says what is wrong with the
// option called n (it starts with n and a space or colon): one message
// per option, as "--base-url URL is required (or ...)" then
// "--base-url: required" from a second check would say it twice.
func saidOf(parts []string, n string) bool {
	for _, p := range parts {
		if rest, ok := strings.CutPrefix(p, n); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, ":")) {
			return true
		}
	}
	return false
}

// joined returns the errors err joins when it is an errors.Join (its
// text is theirs, one per line), nil otherwise: an error that wraps
// several with a message of its own (fmt.Errorf with two %w) stays whole.
func joined(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil
	}
	subs := j.Unwrap()
	texts := make([]string, 0, len(subs))
	for _, e := range subs {
		if e != nil {
			texts = append(texts, e.Error())
		}
	}
	if strings.Join(texts, "\n") != err.Error() {
		return nil
	}
	return subs
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

// A Field is one option a package declares for the command line. Ptr
// points at the option's value, which holds its default: a *string,
// *int, *int64, *uint64, *float64, *bool or *time.Duration. cmd/kvtier
// makes a flag of it; the package validates the value in its Validate.
type Field struct {
	Name  string // "host-mem"
	Usage string
	Ptr   any
}
