// Package units parses and formats the quantities kvtier's flags take:
// token counts ("8k", "64Ki"), byte sizes ("16MiB", "1.5GB") and lists of
// them. Values are normalised to base units (tokens, bytes) on the way in
// and scaled only for display.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseTokens parses a token count. Plain integers are taken as they are;
// "k"/"Ki" multiply by 1024 and "m"/"Mi" by 1024², because prefix lengths
// are spoken of in powers of two ("8k" is 8192 tokens, as in vLLM's
// benchmarks). The count must be positive.
func ParseTokens(s string) (int, error) {
	n, err := tokenCount.parse(s)
	return int(n), err
}

// A suffix is a unit suffix (lower case) and the multiplier it stands for.
type suffix struct {
	s string
	m float64
}

var tokenSuffixes = []suffix{{"ki", 1 << 10}, {"mi", 1 << 20}, {"k", 1 << 10}, {"m", 1 << 20}}

// scaled parses t, a finite number followed by at most one of sufs
// (matched case-insensitively, the first in sufs that matches wins), and
// returns the number times the suffix's multiplier. ok is false when what
// precedes the suffix is not a finite number.
func scaled(t string, sufs []suffix) (v float64, ok bool) {
	lower := strings.ToLower(t)
	mult := 1.0
	for _, suf := range sufs {
		if strings.HasSuffix(lower, suf.s) {
			mult = suf.m
			t = t[:len(t)-len(suf.s)]
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v * mult, true
}

var byteSuffixes = []suffix{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"ki", 1 << 10}, {"mi", 1 << 20}, {"gi", 1 << 30}, {"ti", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1},
}

// ParseBytes parses a byte size. SI suffixes (KB, MB, GB, TB) are powers of
// ten, IEC suffixes (KiB, MiB, GiB, TiB, or K/M/G/T alone) powers of two.
// The size must be positive; decimals are taken ("1.45TiB"), a size of
// 1 KiB or more rounded to the nearest byte, a smaller one must be a
// whole number of bytes. What uses the size in blocks rounds it with
// Blocks, which says so.
func ParseBytes(s string) (int64, error) {
	n, err := byteSize.parse(s)
	return int64(n), err
}

// A quantity is a kind of positive whole count a flag takes: its name in
// errors, its unit, examples of it, its suffixes, its largest value and
// the value from which a fraction of the unit is rounded away (0: never).
type quantity struct {
	name, unit, examples string
	suffixes             []suffix
	max, round           float64
}

var (
	tokenCount = quantity{"token count", "tokens", "1024, 8k, 64Ki", tokenSuffixes, math.MaxInt32, 0}
	byteSize   = quantity{"size", "bytes", "16MiB, 1.45TiB, 1.5GB, 4096", byteSuffixes, math.MaxInt64 / 2, 1024}
)

// parse parses s as a positive whole number of q's unit, with one of its
// suffixes.
func (q quantity) parse(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty %s", q.name)
	}
	n, ok := scaled(t, q.suffixes)
	if !ok {
		return 0, fmt.Errorf("%q is not a %s (want e.g. %s)", s, q.name, q.examples)
	}
	if q.round > 0 && n >= q.round {
		n = math.Round(n)
	}
	if n != math.Trunc(n) {
		return 0, fmt.Errorf("%q is not a whole number of %s", s, q.unit)
	}
	if n <= 0 {
		return 0, fmt.Errorf("%q: %s must be positive", s, q.name)
	}
	if n > q.max {
		return 0, fmt.Errorf("%q: %s too large", s, q.name)
	}
	return n, nil
}

// Blocks returns how many whole blocks of blockBytes a size of bytes
// holds, rounded down, and, when the size is not a whole number of
// blocks, a note saying so ("1.45 TiB is not a whole number of 1.5 MiB
// blocks: rounded down to 1,013,623 blocks, 1.45 TiB"); "" when it is.
func Blocks(bytes, blockBytes int64) (int64, string) {
	if blockBytes <= 0 {
		return 0, ""
	}
	n := bytes / blockBytes
	if bytes%blockBytes == 0 {
		return n, ""
	}
	return n, fmt.Sprintf("%s is not a whole number of %s blocks: rounded down to %s blocks, %s",
		FormatBytes(bytes), FormatBytes(blockBytes), Commas(n), formatApart(n*blockBytes, bytes))
}

// formatApart formats a size of n bytes so that it reads differently
// from the size it was rounded from: FormatBytes's unit with at least
// its decimals and up to six ("511.97 GiB" beside "512 GiB"), else in bytes ("4,096 B").
func formatApart(n, from int64) string {
	shown := FormatBytes(from)
	num, unit, _ := strings.Cut(shown, " ")
	scale := map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[unit]
	_, frac, _ := strings.Cut(num, ".")
	for prec := len(frac); prec <= 6 && unit != "B"; prec++ {
		if s := trimZeros(strconv.FormatFloat(float64(n)/scale, 'f', prec, 64)) + " " + unit; s != shown {
			return s
		}
	}
	return Commas(n) + " B"
}

// ParseList splits a comma-separated flag value and parses each element
// with parse. Empty elements are an error, so "1k,,2k" is refused.
func ParseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty list")
	}
	var out []T
	for f := range strings.SplitSeq(s, ",") {
		v, err := parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// FormatBytes renders a byte count with an IEC unit and three
// significant digits, for display only ("1.5 MiB", "16 KiB", "11.5 GiB");
// whole bytes below 1 KiB ("512 B").
func FormatBytes[T ~int | ~int64 | ~float64](n T) string {
	f := float64(n)
	if math.IsNaN(f) {
		return ""
	}
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if math.Abs(f) < 1024 || u == "TiB" {
			if u == "B" {
				return strconv.FormatFloat(f, 'f', 0, 64) + " B"
			}
			return trimZeros(FormatSig(f)) + " " + u
		}
		f /= 1024
	}
	return ""
}

// trimZeros drops trailing zeros after a decimal point: "16.0" is "16",
// "1.50" is "1.5".
func trimZeros(s string) string {
	if !strings.Contains(s, ".") || strings.ContainsAny(s, "e") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// FormatTokens renders a token count the way it is usually written:
// "8k" for 8192, "1,000" for 1000.
func FormatTokens[T ~int | ~int64](n T) string {
	if n >= 1024 && n%1024 == 0 {
		return strconv.FormatInt(int64(n/1024), 10) + "k"
	}
	return Commas(int64(n))
}

// FormatSig renders x with three significant digits, without an exponent
// from 0.001 up; from 1000 up it is a whole number with commas, as a
// count is written. The digits are chosen after rounding, so that 9.996
// is "10.0", not "10.00"; "" for NaN and ±Inf.
func FormatSig(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	a := math.Abs(round3(x))
	switch {
	case a == 0:
		return "0"
	case a >= 1e15: // past any count written out; int64 would overflow
		return strconv.FormatFloat(x, 'g', 3, 64)
	case a >= 1000:
		return Commas(int64(math.Round(x)))
	case a >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	case a >= 0.001:
		return strconv.FormatFloat(x, 'f', int(2-math.Floor(math.Log10(a))), 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// round3 is x rounded to three significant digits.
func round3(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	return r
}

// FormatSeconds renders a duration in seconds with three significant
// digits in the unit that suits it once rounded: ns, µs, ms or s ("1.00
// s" for 0.9996, not "1000 ms"; "0 s" for zero). From 1000 s up it is
// whole seconds with commas ("2,546 s"): a figure a reader compares with
// a budget in seconds, and no unit to convert. "" for NaN and ±Inf.
func FormatSeconds(s float64) string {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return ""
	}
	switch a := math.Abs(round3(s)); {
	case a == 0:
		return "0 s"
	case a < 1e-6:
		return FormatSig(s*1e9) + " ns"
	case a < 1e-3:
		return FormatSig(s*1e6) + " µs"
	case a < 1:
		return FormatSig(s*1e3) + " ms"
	}
	return FormatSig(s) + " s"
}

// Commas renders n with thousands separated by commas.
func Commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Count is n followed by one when n is 1, else by many: Count(1, "row
// is an error", "rows are errors") is "1 row is an error".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
