package mesh

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxHosts bounds one expanded host list (Slurm's own limit on a range is
// 64 Ki hosts), so a malformed list cannot make a rank allocate without
// bound.
const MaxHosts = 1 << 16

// MaxHostName bounds one host name as DNS does (253 characters), so a
// malformed list cannot make a rank build gigabytes of names.
const MaxHostName = 253

// MaxHostlist bounds the text of one host list (1 MiB: 65,536 names of
// 15 characters written out one by one), checked before it is parsed.
const MaxHostlist = 1 << 20

// ExpandHostlist expands Slurm's hostlist syntax into host names, in
// order, duplicates kept, as `scontrol show hostnames` prints them:
// entries separated by commas (outside brackets) or white space; in an
// entry each bracket group "[1-3,7]" holds numbers and ranges whose
// width is that of the range's first number ("[01-10]" gives 01..10),
// and several groups expand as a product ("r[1-2]n[1-3]"). Text after
// the last group ("gpu[01-04]-ib") is kept as a suffix: newer Slurm and
// pdsh accept it; Slurm 22.05's scontrol calls such a list invalid.
func ExpandHostlist(list string) ([]string, error) {
	if len(list) > MaxHostlist {
		return nil, fmt.Errorf("hostlist %s: longer than %d bytes", quoteShort(list), MaxHostlist)
	}
	var out []string
	for _, entry := range splitEntries(list) {
		hosts, err := expandEntry(entry)
		if err != nil {
			return nil, fmt.Errorf("hostlist %s: %w", quoteShort(list), err)
		}
		if len(out)+len(hosts) > MaxHosts {
			return nil, fmt.Errorf("hostlist %s: more than %d hosts", quoteShort(list), MaxHosts)
		}
		out = append(out, hosts...)
	}
	return out, nil
}

// splitEntries cuts list at commas outside brackets and at white space,
// dropping empty entries.
func splitEntries(list string) []string {
	var out []string
	depth, start := 0, 0
	cut := func(i int) {
		if e := list[start:i]; e != "" {
			out = append(out, e)
		}
		start = i + 1
	}
	for i := 0; i < len(list); i++ {
		switch c := list[i]; {
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth <= 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n'):
			cut(i)
		}
	}
	cut(len(list))
	return out
}

// expandEntry expands one entry: literal text and bracket groups.
func expandEntry(entry string) ([]string, error) {
	hosts := []string{""}
	for entry != "" {
		open := strings.IndexByte(entry, '[')
		shut := strings.IndexByte(entry, ']')
		if open < 0 {
			if shut >= 0 {
				return nil, errors.New("']' without '['")
			}
			if err := checkNameLen(hosts, entry, 0); err != nil {
				return nil, err
			}
			return appendAll(hosts, []string{entry}), nil
		}
		if shut < open {
			return nil, errors.New("unbalanced brackets")
		}
		if next := strings.IndexByte(entry[open+1:], '['); next >= 0 && open+1+next < shut {
			return nil, errors.New("nested '['")
		}
		group, err := parseRanges(entry[open+1 : shut])
		if err != nil {
			return nil, err
		}
		if len(hosts)*group.count > MaxHosts {
			return nil, fmt.Errorf("more than %d hosts", MaxHosts)
		}
		if err := checkNameLen(hosts, entry[:open], group.width); err != nil {
			return nil, err
		}
		nums := group.expand()
		hosts = appendAll(appendAll(hosts, []string{entry[:open]}), nums)
		entry = entry[shut+1:]
	}
	return hosts, nil
}

// checkNameLen refuses to build names (every host, then text, then a
// number of up to width digits) longer than MaxHostName, before they are
// built.
func checkNameLen(hosts []string, text string, width int) error {
	n := 0
	for _, h := range hosts {
		n = max(n, len(h))
	}
	if n+len(text)+width > MaxHostName {
		return fmt.Errorf("a host name longer than %d characters", MaxHostName)
	}
	return nil
}

// quoteShort quotes s for a one-line message, cut to its first 64 bytes.
func quoteShort(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:64]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// appendAll returns every a followed by every b, a-major.
func appendAll(as, bs []string) []string {
	out := make([]string, 0, len(as)*len(bs))
	for _, a := range as {
		for _, b := range bs {
			out = append(out, a+b)
		}
	}
	return out
}

// span is one range of a bracket group: lo..hi, zero-padded to pad.
type span struct {
	lo, hi int64
	pad    int
}

// group is a parsed bracket group: its ranges, how many numbers they
// hold and the widest number's digits, known before any is printed.
type group struct {
	spans []span
	count int
	width int
}

// parseRanges parses the inside of a bracket group ("1-3,07,10-11"),
// checking its count against MaxHosts and each number's width against
// MaxHostName before anything is expanded: a number padded to 120,000
// digits would otherwise print 65,536 names of that width.
func parseRanges(s string) (group, error) {
	var g group
	for r := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if len(lo) > MaxHostName || len(hi) > MaxHostName {
			return group{}, fmt.Errorf("a number of %d digits: a host name longer than %d characters", max(len(lo), len(hi)), MaxHostName)
		}
		a, err := parseIndex(lo)
		if err != nil {
			return group{}, fmt.Errorf("range %s: %w", quoteShort(r), err)
		}
		b := a
		if isRange {
			if b, err = parseIndex(hi); err != nil {
				return group{}, fmt.Errorf("range %s: %w", quoteShort(r), err)
			}
		}
		if b < a {
			return group{}, fmt.Errorf("range %s runs backwards", quoteShort(r))
		}
		if b-a >= MaxHosts || g.count+int(b-a)+1 > MaxHosts {
			return group{}, fmt.Errorf("range %s: more than %d hosts", quoteShort(r), MaxHosts)
		}
		g.spans = append(g.spans, span{a, b, len(lo)})
		g.count += int(b-a) + 1
		g.width = max(g.width, len(lo), len(strconv.FormatInt(b, 10)))
	}
	return g, nil
}

// expand prints every number of g, in order.
func (g group) expand() []string {
	out := make([]string, 0, g.count)
	for _, sp := range g.spans {
		for n := sp.lo; n <= sp.hi; n++ {
			out = append(out, fmt.Sprintf("%0*d", sp.pad, n))
		}
	}
	return out
}

func parseIndex(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("empty number")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%s is not a number", quoteShort(s))
		}
	}
	return strconv.ParseInt(s, 10, 64)
}
