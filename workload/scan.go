package workload

import (
	"strconv"
)

// A fieldSet has one bit per known field a line held.
type fieldSet uint16

const (
	hasTimestamp fieldSet = 1 << iota
	hasInput
	hasOutput
	hasHashes
	hasTurn
)

// fields are the known fields of one line, as the fast scanner or
// encoding/json read them. The id fields hold their raw JSON text (nil
// when absent, "null" when null), as json.RawMessage would.
type fields struct {
	has                            fieldSet // non-null numeric fields present
	timestamp                      float64
	input, output, turn            int64
	hashes                         []uint64
	chatID, parentID, session, typ []byte
}

// scan reads the known fields of a line without allocating, for lines of
// the shape trace writers produce: one flat JSON object whose strings
// hold no escapes and no bytes past ASCII, whose numbers fit the fields
// and whose keys appear once, exactly spelled. Unknown keys with a string,
// number, boolean or null value are skipped. It returns false for
// anything else, valid or not; the caller then decodes the line with
// encoding/json, which also words the errors, so both paths agree on
// every line scan accepts.
func (f *fields) scan(b []byte) bool {
	*f = fields{hashes: f.hashes[:0]}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	var seen uint16
	for {
		key, j, ok := plainString(b, i)
		if !ok {
			return false
		}
		if i = skipSpace(b, j); i >= len(b) || b[i] != ':' {
			return false
		}
		k := keyIndex(key)
		if k == keyFolded || (k >= 0 && seen&(1<<k) != 0) {
			return false // encoding/json matches keys case-insensitively; a repeat overwrites
		}
		if k >= 0 {
			seen |= 1 << k
		}
		if i, ok = f.value(k, b, skipSpace(b, i+1)); !ok {
			return false
		}
		if i = skipSpace(b, i); i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// The known keys, by index into knownKeys.
const (
	keyTimestamp = iota
	keyInput
	keyOutput
	keyHashes
	keyTurn
	keyChat
	keyParent
	keySession
	keyType
	keyUnknown = -1
	keyFolded  = -2 // a case variant of a known key, or not plain ASCII
)

var knownKeys = [...]string{"timestamp", "input_length", "output_length", "hash_ids", "turn", "chat_id", "parent_chat_id", "session_id", "type"}

// keyIndex returns the index of key in knownKeys, keyUnknown for a key
// encoding/json would not match to a field, or keyFolded for one it
// might match case-insensitively.
func keyIndex(key []byte) int {
	for i, k := range knownKeys {
		if string(key) == k {
			return i
		}
	}
	for _, k := range knownKeys {
		if foldEqual(key, k) {
			return keyFolded
		}
	}
	for _, c := range key {
		if c >= 0x80 {
			return keyFolded
		}
	}
	return keyUnknown
}

// foldEqual reports whether key equals k with ASCII letters folded, as
// encoding/json matches names.
func foldEqual(key []byte, k string) bool {
	if len(key) != len(k) {
		return false
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != k[i] {
			return false
		}
	}
	return true
}

// value reads the value of key k at b[i:] into f and returns the index
// past it.
func (f *fields) value(k int, b []byte, i int) (int, bool) {
	if j, ok := literal(b, i, "null"); ok {
		switch k {
		case keyChat:
			f.chatID = b[i:j]
		case keyParent:
			f.parentID = b[i:j]
		case keySession:
			f.session = b[i:j]
		case keyType:
			f.typ = b[i:j]
		}
		return j, true
	}
	var v int64
	var j int
	ok := false
	switch k {
	case keyTimestamp:
		f.timestamp, j, ok = number(b, i)
		f.has |= hasTimestamp
	case keyInput, keyOutput, keyTurn:
		v, j, ok = integer(b, i)
		f.setInt(k, v)
	case keyHashes:
		j, ok = f.hashList(b, i)
		f.has |= hasHashes
	case keyChat, keyParent, keySession, keyType:
		j, ok = idToken(b, i)
		f.setID(k, b[i:j])
	default:
		j, ok = skipScalar(b, i)
	}
	return j, ok
}

func (f *fields) setInt(k int, v int64) {
	switch k {
	case keyInput:
		f.input, f.has = v, f.has|hasInput
	case keyOutput:
		f.output, f.has = v, f.has|hasOutput
	case keyTurn:
		f.turn, f.has = v, f.has|hasTurn
	}
}

func (f *fields) setID(k int, raw []byte) {
	switch k {
	case keyChat:
		f.chatID = raw
	case keyParent:
		f.parentID = raw
	case keySession:
		f.session = raw
	case keyType:
		f.typ = raw
	}
}

// hashList reads a JSON array of integers into f.hashes.
func (f *fields) hashList(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '[' {
		return i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		v, j, ok := integer(b, i)
		if !ok {
			return j, false
		}
		f.hashes = append(f.hashes, uint64(v))
		if i = skipSpace(b, j); i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// plainString returns the contents of the JSON string at b[i:] and the
// index past it, when it holds only printable ASCII and no escapes.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, j, false
		}
	}
	return nil, len(b), false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// integer reads a JSON integer of at most 18 digits (no fraction, no
// exponent).
func integer(b []byte, i int) (int64, int, bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var v int64
	for i < len(b) && isDigit(b[i]) {
		v = v*10 + int64(b[i]-'0')
		i++
	}
	n := i - start
	if n == 0 || n > 18 || (n > 1 && b[start] == '0') {
		return 0, i, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, i, false
	}
	if neg {
		v = -v
	}
	return v, i, true
}

// numberEnd returns the index past the JSON number at b[i:], and whether
// it is one.
func numberEnd(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	start := i
	i = digitsEnd(b, i)
	if i == start || (i-start > 1 && b[start] == '0') {
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		frac := i + 1
		if i = digitsEnd(b, frac); i == frac {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		exp := i
		if i = digitsEnd(b, exp); i == exp {
			return i, false
		}
	}
	return i, true
}

// digitsEnd returns the index past the run of decimal digits at b[i:].
func digitsEnd(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// number reads a JSON number as a float64, exactly as strconv.ParseFloat
// (and so encoding/json) does.
func number(b []byte, i int) (float64, int, bool) {
	if v, j, ok := integer(b, i); ok && v != 0 && v > -1<<53 && v < 1<<53 {
		return float64(v), j, true // exact
	}
	j, ok := numberEnd(b, i)
	if !ok {
		return 0, j, false
	}
	v, err := strconv.ParseFloat(string(b[i:j]), 64)
	return v, j, err == nil
}

// idToken reads an identifier's value: a plain string or an integer.
func idToken(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '"' {
		_, j, ok := plainString(b, i)
		return j, ok
	}
	_, j, ok := integer(b, i)
	return j, ok
}

// skipScalar skips a plain string, a number, true or false.
func skipScalar(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		_, j, ok := plainString(b, i)
		return j, ok
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	}
	return numberEnd(b, i)
}
