// Package redact keeps credentials out of what kvtier writes: a URL with
// a password (http://user:secret@host) is written as http://user:***@host
// in rows, manifests, reports and messages, wherever it came from. It
// imports nothing else from kvtier.
package redact

import (
	"net/url"
	"slices"
	"strings"
)

// URL returns s with the password of a URL in it replaced by ***; text
// that is not such a URL is returned as it is.
func URL(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return redactRaw(s, i)
	}
	if _, has := u.User.Password(); !has {
		return s
	}
	u.User = url.UserPassword(u.User.Username(), "***")
	return strings.Replace(u.String(), "%2A%2A%2A", "***", 1)
}

// redactRaw redacts the userinfo of a URL net/url cannot parse: from the
// scheme's "://" to the last "@" before the path.
func redactRaw(s string, i int) string {
	rest := s[i+3:]
	end := len(rest)
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		end = j
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return s
	}
	user := rest[:at]
	if c := strings.Index(user, ":"); c >= 0 {
		user = user[:c+1] + "***"
	}
	return s[:i+3] + user + rest[at:]
}

// secretFlags are the flags whose value is a secret as a whole (the run
// token): Args writes *** for it.
var secretFlags = []string{"--token", "-token"}

// Args returns a copy of a command line with every URL's password
// replaced, in plain arguments and in --flag=value ones, and the value
// of a secret flag (--token X, --token=X) replaced by ***.
func Args(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		k, v, ok := strings.Cut(a, "=")
		switch {
		case ok && slices.Contains(secretFlags, k):
			out[i] = k + "=***"
		case ok && strings.HasPrefix(k, "-"):
			out[i] = k + "=" + URL(v)
		case i > 0 && slices.Contains(secretFlags, args[i-1]):
			out[i] = "***"
		default:
			out[i] = URL(a)
		}
	}
	return out
}
