package workload

import (
	"bufio"
	"bytes"
	"math"
	"reflect"
	"testing"
)

// decodeBoth reads b with the fast scanner and with encoding/json and
// returns both lines and errors; fast is false where the scanner left the
// line to encoding/json.
func decodeBoth(b []byte, block int) (fastLine, slowLine line, fastErr, slowErr error, fast bool) {
	var ff, sf fields
	fast = ff.scan(b)
	if fast {
		fastLine, fastErr = ff.line(1, block, "")
	}
	if slowErr = sf.decodeJSON(b); slowErr == nil {
		slowLine, slowErr = sf.line(1, block, "")
	}
	if fast && !sameFields(&ff, &sf) {
		slowErr = errFieldsDiffer
	}
	return fastLine, slowLine, fastErr, slowErr, fast
}

var errFieldsDiffer = bytesError("the scanner's fields differ from encoding/json's")

type bytesError string

func (e bytesError) Error() string { return string(e) }

func sameFields(a, b *fields) bool {
	return a.has == b.has && math.Float64bits(a.timestamp) == math.Float64bits(b.timestamp) &&
		a.input == b.input && a.output == b.output && a.turn == b.turn &&
		slicesEqual(a.hashes, b.hashes) && sameRaw(a.chatID, b.chatID) && sameRaw(a.parentID, b.parentID) &&
		sameRaw(a.session, b.session) && sameRaw(a.typ, b.typ)
}

func slicesEqual(a, b []uint64) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func sameRaw(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// checkDecoders fails when the scanner accepted a line encoding/json
// rejects, or read it differently.
func checkDecoders(t *testing.T, b []byte, block int) bool {
	t.Helper()
	fl, sl, fe, se, fast := decodeBoth(b, block)
	if !fast {
		return false
	}
	if se == errFieldsDiffer || (fe == nil) != (se == nil) || (fe != nil && fe.Error() != se.Error()) || !reflect.DeepEqual(fl, sl) {
		t.Fatalf("%q: the scanner read %+v, %v; encoding/json %+v, %v", b, fl, fe, sl, se)
	}
	return true
}

// FuzzDecoder is the differential check of the fast scanner: on every
// line it accepts, it reads what encoding/json reads.
func FuzzDecoder(f *testing.F) {
	for _, l := range decoderLines {
		f.Add([]byte(l.text), 0)
	}
	f.Fuzz(func(t *testing.T, b []byte, block int) { checkDecoders(t, b, block%4096) })
}

var decoderLines = []struct {
	text string
	fast bool // the scanner reads it (else encoding/json does)
}{
	{`{"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 3]}`, true},
	{`{"timestamp":10,"input_length":600,"output_length":5,"hash_ids":[1,4],"session_id":3,"turn":2}`, true},
	{`{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 20, "output_length": 3, "type": "text", "turn": 1, "hash_ids": [1, 2]}`, true},
	{`{"chat_id": "x", "parent_chat_id": "9", "session_id": "s-4", "timestamp": 6e-1, "input_length": 16, "hash_ids": [-8]}`, true},
	{` { "timestamp" : -0 , "input_length" : 1 , "hash_ids" : [ ] , "extra": "a", "n": 1.5e3, "b": true, "c": null } `, true},
	{`{"timestamp": 1, "input_length": null, "hash_ids": null, "session_id": null}`, true},
	{`{"timestamp": 1e400, "input_length": 1, "hash_ids": []}`, false},
	{`{"timestamp": 1, "input_length": 1.0, "hash_ids": []}`, false},
	{`{"timestamp": 1, "input_length": 1, "hash_ids": [1, null]}`, false},
	{`{"timestamp": 1, "input_length": 1, "hash_ids": [9223372036854775807]}`, false},
	{`{"timestamp": 1, "timestamp": 2, "input_length": 1, "hash_ids": []}`, false},
	{`{"Timestamp": 1, "input_length": 1, "hash_ids": []}`, false},
	{`{"timestamp": 1, "input_length": 1, "hash_ids": [], "x": {"y": 1}}`, false},
	{`{"timestamp": 1, "input_length": 1, "hash_ids": [], "session_id": "a\"b"}`, false},
	{`{"timestamp": 1, "input_length": 1, "hash_ids": [], "session_id": true}`, false},
	{`{"timestamp": 1, "input_length": 1, "hash_ids": [01]}`, false},
	{`{"timestamp": 1, "input_length": 1, "hash_ids": []} x`, false},
	{`[1, 2]`, false},
	{`{"timestamp": 1, "input_length": 1, "hash_ids": [1,]}`, false},
}

// The scanner reads the usual lines itself and agrees with encoding/json
// on them; the rest it leaves to encoding/json.
func TestDecoderAgrees(t *testing.T) {
	for _, l := range decoderLines {
		if got := checkDecoders(t, []byte(l.text), 0); got != l.fast {
			t.Errorf("%s: scanned %v, want %v", l.text, got, l.fast)
		}
	}
}

// Every line the generator writes is read by the scanner, as encoding/json
// reads it.
func TestDecoderGenerated(t *testing.T) {
	sc := bufio.NewScanner(bytes.NewReader(generated(t)))
	n := 0
	for sc.Scan() {
		if !checkDecoders(t, sc.Bytes(), 0) {
			t.Fatalf("line %d left to encoding/json: %s", n+1, sc.Bytes())
		}
		n++
	}
	if n < 1000 {
		t.Fatalf("%d lines", n)
	}
}

// The scanner does not allocate.
func TestDecoderAllocs(t *testing.T) {
	b := []byte(decoderLines[2].text)
	var f fields
	f.scan(b)
	if n := testing.AllocsPerRun(100, func() { f.scan(b) }); n != 0 {
		t.Errorf("%v allocations per line", n)
	}
}

// TestNumberEnd checks where a JSON number ends and which forms are
// refused, as encoding/json's grammar has them.
func TestNumberEnd(t *testing.T) {
	tests := []struct {
		in   string
		end  int
		isOK bool
	}{
		{"0,", 1, true},
		{"-12]", 3, true},
		{"3.25}", 4, true},
		{"1e9,", 3, true},
		{"-1.5E+10 ", 8, true},
		{"2.5e-3", 6, true},
		{"01", 2, false},
		{"-", 1, false},
		{"1.", 2, false},
		{"1.e5", 2, false},
		{"1e", 2, false},
		{"1e+", 3, false},
	}
	for _, tt := range tests {
		end, ok := numberEnd([]byte(tt.in), 0)
		if end != tt.end || ok != tt.isOK {
			t.Errorf("numberEnd(%q) = %d, %v; want %d, %v", tt.in, end, ok, tt.end, tt.isOK)
		}
	}
}
