// Package redact keeps credentials out of what kvtier writes: a URL with
// a password (http://user:secret@host) is written as http://user:***@host
// in rows, manifests, reports and messages, wherever it came from. It
// imports nothing else from kvtier.
package redact

import (
	"net/url"
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

// Args returns a copy of a command line with every URL's password
// replaced, in plain arguments and in --flag=value ones.
func Args(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") {
			out[i] = k + "=" + URL(v)
			continue
		}
		out[i] = URL(a)
	}
	return out
}
