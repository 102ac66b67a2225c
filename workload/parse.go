package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// A line is one parsed line of a trace, before ordering.
type line struct {
	format  Format
	id      string // chat_id; "" for Mooncake
	parent  string // parent_chat_id; "" when none
	session string // session_id; "" when absent or held in sessionNum
	// sessionNum is the session_id when its text is an integer's
	// (5 or "5"): such ids are looked up without a string.
	sessionNum int64
	numbered   bool // sessionNum holds the session_id
	turn       int  // 0 when absent
	time       float64
	input      int
	output     int
	typ        string
	hashes     []uint64
	num        int // line number
}

// rawLine holds the fields of both formats; a nil field was absent.
type rawLine struct {
	Timestamp    *float64        `json:"timestamp"`
	InputLength  *int64          `json:"input_length"`
	OutputLength *int64          `json:"output_length"`
	HashIDs      *[]int64        `json:"hash_ids"`
	ChatID       json.RawMessage `json:"chat_id"`
	ParentChatID json.RawMessage `json:"parent_chat_id"`
	SessionID    json.RawMessage `json:"session_id"`
	Turn         *int64          `json:"turn"`
	Type         json.RawMessage `json:"type"`
}

// maxLength bounds input_length and output_length: no model has a context
// of a billion tokens, and a larger value is a corrupt line.
const maxLength = 1 << 30

// parseLine parses one line of a trace, using f's buffers. Block size B
// checks that the hash ids fit the input: more ids than
// ceil(input_length/B) blocks is an error. Lines of the usual shape are
// read by f's scanner, without allocating per field; any other line,
// valid or not, by encoding/json, whose errors the messages keep.
func parseLine(f *fields, b []byte, num, blockTokens int, want Format) (line, error) {
	if !f.scan(b) {
		if err := f.decodeJSON(b); err != nil {
			return line{}, err
		}
	}
	return f.line(num, blockTokens, want)
}

// line checks the fields read and makes them a line.
func (f *fields) line(num, blockTokens int, want Format) (line, error) {
	l := line{num: num, format: Mooncake}
	if f.chatID != nil || f.parentID != nil {
		l.format = Alibaba
	}
	if want != "" && l.format != want {
		return line{}, fmt.Errorf("a %s line in a %s trace", l.format, want)
	}
	if err := l.required(f); err != nil {
		return line{}, err
	}
	if blockTokens <= 0 {
		blockTokens = l.format.DefaultBlockTokens()
	}
	if blocks := (l.input + blockTokens - 1) / blockTokens; len(l.hashes) > blocks {
		return line{}, fmt.Errorf("%d hash_ids but input_length %d is %d blocks of %d tokens (is the block size right? --trace-block)",
			len(l.hashes), l.input, blocks, blockTokens)
	}
	return l, l.optional(f)
}

// decodeJSON reads the known fields of b with encoding/json.
func (f *fields) decodeJSON(b []byte) error {
	var raw rawLine
	if err := json.Unmarshal(b, &raw); err != nil {
		return jsonError(err)
	}
	*f = fields{hashes: f.hashes[:0], chatID: raw.ChatID, parentID: raw.ParentChatID, session: raw.SessionID, typ: raw.Type}
	if raw.Timestamp != nil {
		f.timestamp, f.has = *raw.Timestamp, f.has|hasTimestamp
	}
	for _, v := range []struct {
		p   *int64
		dst *int64
		bit fieldSet
	}{{raw.InputLength, &f.input, hasInput}, {raw.OutputLength, &f.output, hasOutput}, {raw.Turn, &f.turn, hasTurn}} {
		if v.p != nil {
			*v.dst, f.has = *v.p, f.has|v.bit
		}
	}
	if raw.HashIDs != nil {
		f.has |= hasHashes
		for _, h := range *raw.HashIDs {
			f.hashes = append(f.hashes, uint64(h))
		}
	}
	return nil
}

// required checks and copies the fields both formats must have.
func (l *line) required(f *fields) error {
	switch {
	case f.has&hasTimestamp == 0:
		return errors.New("no timestamp")
	case f.has&hasInput == 0:
		return errors.New("no input_length")
	case f.has&hasHashes == 0:
		return errors.New("no hash_ids")
	}
	t := f.timestamp
	if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
		return fmt.Errorf("timestamp %v: must be a finite number ≥ 0", t)
	}
	if l.format == Mooncake {
		t /= 1000 // milliseconds
	}
	l.time = t
	in := f.input
	if in < 1 || in > maxLength {
		return fmt.Errorf("input_length %d: must be between 1 and %d", in, maxLength)
	}
	l.input = int(in)
	if f.has&hasOutput != 0 {
		out := f.output
		if out < 0 || out > maxLength {
			return fmt.Errorf("output_length %d: must be between 0 and %d", out, maxLength)
		}
		l.output = int(out)
	}
	l.hashes = slices.Clone(f.hashes)
	return nil
}

// optional copies the identity fields: chat ids, session, turn, type.
func (l *line) optional(f *fields) error {
	var err error
	if l.id, err = idText(f.chatID); err != nil {
		return fmt.Errorf("chat_id: %w", err)
	}
	if l.format == Alibaba && l.id == "" {
		return errors.New("no chat_id")
	}
	if l.parent, err = idText(f.parentID); err != nil {
		return fmt.Errorf("parent_chat_id: %w", err)
	}
	if l.parent == "-1" || l.parent == l.id {
		l.parent = ""
	}
	if l.sessionNum, l.numbered = idNumber(f.session); !l.numbered {
		if l.session, err = idText(f.session); err != nil {
			return fmt.Errorf("session_id: %w", err)
		}
	}
	if f.has&hasTurn != 0 {
		if f.turn < 0 || f.turn > maxLength {
			return fmt.Errorf("turn %d: must be between 0 and %d", f.turn, maxLength)
		}
		l.turn = int(f.turn)
	}
	if l.typ, err = idText(f.typ); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	return nil
}

// idText returns an identifier given as a JSON string or integer as text;
// null and absence are "".
func idText(m []byte) (string, error) {
	m = bytes.TrimSpace(m)
	if len(m) == 0 || string(m) == "null" {
		return "", nil
	}
	if plain, _, ok := plainString(m, 0); ok && len(plain) == len(m)-2 {
		return string(plain), nil
	}
	if n, j, ok := integer(m, 0); ok && j == len(m) {
		return strconv.FormatInt(n, 10), nil
	}
	if m[0] == '"' {
		var s string
		err := json.Unmarshal(m, &s)
		return s, err
	}
	n, err := strconv.ParseInt(string(m), 10, 64)
	if err != nil {
		return "", fmt.Errorf("%s is neither a string nor an integer", truncate(string(m), 40))
	}
	return strconv.FormatInt(n, 10), nil
}

// idNumber returns an identifier whose text (idText) is an integer's,
// given as a JSON integer or a string holding one: 5 and "5" are one id,
// "05" another, which idText keeps as text.
func idNumber(m []byte) (int64, bool) {
	quoted := len(m) > 0 && m[0] == '"'
	if quoted {
		plain, _, ok := plainString(m, 0)
		if !ok || len(plain) != len(m)-2 {
			return 0, false
		}
		m = plain
	}
	n, j, ok := integer(m, 0)
	// "-0" reads as 0 but idText keeps it as text; -0 is 0.
	return n, ok && j == len(m) && (n != 0 || len(m) == 1 || !quoted)
}

// jsonError shortens encoding/json's messages to the point.
func jsonError(err error) error {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return fmt.Errorf("not a JSON object but a JSON %s", te.Value)
		}
		return fmt.Errorf("%s: %s is not %s", te.Field, te.Value, jsonType(te.Type.Kind().String()))
	}
	return fmt.Errorf("not a JSON object: %v", err)
}

func jsonType(kind string) string {
	switch kind {
	case "int64", "slice":
		return "an integer (list)"
	case "float64":
		return "a number"
	}
	return "a " + kind
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
