package knee

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A Command is a server command line whose arguments may hold the
// placeholders {blocks}, {tokens}, {bytes} and {port}.
type Command struct {
	Args []string
}

// Values are what a Command's placeholders stand for at one capacity.
type Values struct {
	Blocks int   // {blocks}: GPU KV blocks
	Tokens int   // {tokens}: blocks × block size
	Bytes  int64 // {bytes}: their KV bytes
	Port   int   // {port}: a free TCP port on 127.0.0.1
}

var placeholder = regexp.MustCompile(`\{[A-Za-z_]+\}`)

// ParseCommand splits s into arguments the way a POSIX shell splits
// words, and expands nothing: words are separated by blanks; in '...'
// every character is literal; in "..." a backslash escapes only ", \, $
// and `; outside quotes a backslash makes the next character literal.
// There are no variables, globs, pipes or redirections: the program is
// run directly. A {name} that is not a known placeholder is an error.
func ParseCommand(s string) (*Command, error) {
	args, err := split(s)
	if err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, errors.New("empty command")
	}
	for _, a := range args {
		for _, p := range placeholder.FindAllString(a, -1) {
			switch p {
			case "{blocks}", "{tokens}", "{bytes}", "{port}":
			default:
				return nil, fmt.Errorf("unknown placeholder %s in %q (known: {blocks}, {tokens}, {bytes}, {port})", p, a)
			}
		}
	}
	return &Command{Args: args}, nil
}

// Expand returns the arguments with the placeholders replaced by v.
func (c *Command) Expand(v Values) []string {
	r := strings.NewReplacer("{blocks}", strconv.Itoa(v.Blocks), "{tokens}", strconv.Itoa(v.Tokens),
		"{bytes}", strconv.FormatInt(v.Bytes, 10), "{port}", strconv.Itoa(v.Port))
	out := make([]string, len(c.Args))
	for i, a := range c.Args {
		out[i] = r.Replace(a)
	}
	return out
}

// UsesPort reports whether the command takes {port}: without it kvtier
// cannot know where the server listens.
func (c *Command) UsesPort() bool {
	for _, a := range c.Args {
		if strings.Contains(a, "{port}") {
			return true
		}
	}
	return false
}

// split splits s into words as ParseCommand says.
func split(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			n, err := doubleQuoted(s[i+1:], &cur)
			if err != nil {
				return nil, err
			}
			i += n + 1
			inWord = true
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("a backslash ends the command")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}

// doubleQuoted copies the text of a "..." quote starting after its
// opening quote into b and returns how many bytes of s it took, the
// closing quote included.
func doubleQuoted(s string, b *strings.Builder) (int, error) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0:
			i++
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	return 0, errors.New("unterminated \" quote")
}
