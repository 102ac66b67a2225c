package workload

import (
	"bytes"

	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// mooncake returns a Mooncake line at ms with input tokens and ids.
func mooncake(ms, input int, ids string) string {
	return `{"timestamp":` + itoa(ms) + `,"input_length":` + itoa(input) + `,"output_length":5,"hash_ids":[` + ids + `]}`
}

func itoa(n int) string { return strconv.Itoa(n) }

func lines(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

func TestReaderTimestampOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		ms       []int
		window   int
		wantLine []int  // lines in the order handed out
		wantErr  string // an error instead
	}{
		{"sorted with ties in file order", []int{3, 1, 2, 2, 0}, 10, []int{5, 2, 3, 4, 1}, ""},
		{"ties only", []int{7, 7, 7}, 1, []int{1, 2, 3}, ""},
		{"displaced by the window", []int{5, 0, 0, 1}, 1, []int{2, 3, 4, 1}, ""},
		{"displaced beyond the window", []int{5, 6, 7, 0}, 1, nil, "line 4: timestamp 0 s is earlier than requests already analysed (0.006 s): the trace is out of timestamp order by more than the reorder window of 1 requests; sort it or raise --reorder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ls []string
			for i, ms := range tc.ms {
				ls = append(ls, mooncake(ms, 10, itoa(i)))
			}
			r, err := NewReader(bytes.NewReader(lines(ls...)), "t", Options{Reorder: tc.window})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for {
				req, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					if tc.wantErr == "" || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("error %v, want %q", err, tc.wantErr)
					}
					return
				}
				if req.Index != len(got) {
					t.Errorf("index %d at position %d", req.Index, len(got))
				}
				got = append(got, req.Line)
			}
			if tc.wantErr != "" {
				t.Fatalf("no error, want %q", tc.wantErr)
			}
			if !slices.Equal(got, tc.wantLine) {
				t.Errorf("lines in order %v, want %v", got, tc.wantLine)
			}
		})
	}
}

func TestReaderMooncake(t *testing.T) {
	t.Parallel()
	// 1100 tokens in 512-token blocks: 512, 512, 76; ms become seconds.
	reqs, st := readAll(t, lines(mooncake(1500, 1100, "7,8,9"), mooncake(2500, 600, "7,10")), Options{})
	if st.Format != Mooncake || st.BlockTokens != 512 || st.SessionsKnown || st.Sessions != 2 {
		t.Errorf("stats %+v", st)
	}
	r := reqs[0]
	if r.Time != 1.5 || r.Blocks() != 3 || r.BlockTokensAt(2) != 76 || r.HashedTokens() != 1100 || r.Output != 5 {
		t.Errorf("request %+v: blocks %d, last %d", r, r.Blocks(), r.BlockTokensAt(2))
	}
	if reqs[1].Session == r.Session || reqs[1].HasParent() || reqs[1].Turn != 1 || !math.IsNaN(reqs[1].Think) {
		t.Errorf("no session ids: %+v", reqs[1])
	}
	// --trace-block 16 reads the same ids as 16-token blocks: 40 tokens
	// are 3 blocks, the last of 8.
	reqs, st = readAll(t, lines(mooncake(0, 40, "1,2,3")), Options{BlockTokens: 16})
	if st.BlockTokens != 16 || reqs[0].Blocks() != 3 || reqs[0].BlockTokensAt(2) != 8 {
		t.Errorf("--trace-block 16: %+v, %d blocks", st, reqs[0].Blocks())
	}
	// Fewer ids than blocks: the rest is unhashed.
	reqs, _ = readAll(t, lines(mooncake(0, 1100, "1")), Options{})
	if reqs[0].HashedTokens() != 512 {
		t.Errorf("hashed tokens %d, want 512", reqs[0].HashedTokens())
	}
}

func TestReaderAlibabaSessions(t *testing.T) {
	t.Parallel()
	// Two chains: a -> c -> d and b -> e; f names a parent never seen;
	// g has a session_id that groups it with h. Timestamps in seconds.
	text := lines(
		`{"chat_id":1,"parent_chat_id":-1,"timestamp":0.5,"input_length":20,"output_length":3,"type":"text","turn":1,"hash_ids":[1,2]}`,
		`{"chat_id":2,"parent_chat_id":-1,"timestamp":1.0,"input_length":16,"output_length":3,"type":"text","turn":1,"hash_ids":[5]}`,
		`{"chat_id":3,"parent_chat_id":1,"timestamp":2.0,"input_length":40,"output_length":3,"type":"text","turn":2,"hash_ids":[1,2,3]}`,
		`{"chat_id":4,"parent_chat_id":3,"timestamp":4.5,"input_length":50,"output_length":3,"type":"file","turn":3,"hash_ids":[1,2,3,4]}`,
		`{"chat_id":"5","parent_chat_id":"2","timestamp":3.0,"input_length":33,"output_length":3,"type":"text","turn":2,"hash_ids":[5,6,7]}`,
		`{"chat_id":6,"parent_chat_id":99,"timestamp":5.0,"input_length":10,"output_length":3,"type":"text","turn":4,"hash_ids":[9]}`,
		`{"chat_id":7,"parent_chat_id":-1,"session_id":"s","timestamp":6.0,"input_length":10,"output_length":3,"type":"text","turn":1,"hash_ids":[11]}`,
		`{"chat_id":8,"parent_chat_id":-1,"session_id":"s","timestamp":7.0,"input_length":20,"output_length":3,"type":"text","turn":2,"hash_ids":[11,12]}`,
	)
	reqs, st := readAll(t, text, Options{})
	if st.Format != Alibaba || st.BlockTokens != 16 || !st.SessionsKnown || st.DanglingParents != 1 || st.Sessions != 4 {
		t.Fatalf("stats %+v", st)
	}
	byID := map[string]*Request{}
	for _, r := range reqs {
		byID[r.ID] = r
	}
	if c := byID["3"]; c.Session != byID["1"].Session || c.Parent != byID["1"].Index || c.Think != 1.5 || c.Turn != 2 {
		t.Errorf("chat 3: %+v", c)
	}
	if d := byID["4"]; d.Session != byID["1"].Session || d.Parent != byID["3"].Index || d.Type != "file" || d.Think != 2.5 {
		t.Errorf("chat 4: %+v", d)
	}
	if e := byID["5"]; e.Session != byID["2"].Session || e.Session == byID["1"].Session {
		t.Errorf("chat 5 (string ids): %+v", e)
	}
	if f := byID["6"]; f.HasParent() || f.Session == byID["1"].Session || f.Turn != 4 {
		t.Errorf("chat 6 (dangling parent): %+v", f)
	}
	if h := byID["8"]; h.Session != byID["7"].Session || h.Parent != byID["7"].Index || h.Think != 1 {
		t.Errorf("chat 8 (session_id): %+v", h)
	}
	// Chat 4 (t=4.5) comes after chat 5 (t=3.0) although it is earlier
	// in the file.
	if byID["4"].Index < byID["5"].Index {
		t.Error("not in timestamp order")
	}
}

func TestReaderMalformedLines(t *testing.T) {
	t.Parallel()
	text := lines(
		mooncake(0, 10, "1"),
		`not json`,
		``,
		`{"timestamp":1,"input_length":10}`,
		`{"timestamp":1,"input_length":-3,"hash_ids":[1]}`,
		mooncake(2, 1100, "1,2,3,4"),
		`{"timestamp":3,"input_length":10,"hash_ids":[1.5]}`,
		`{"chat_id":9,"timestamp":4,"input_length":10,"hash_ids":[1]}`,
		mooncake(5, 10, "2"),
	)
	reqs, st := readAll(t, text, Options{})
	if len(reqs) != 2 || st.Malformed != 6 || st.Lines != 9 {
		t.Fatalf("%d requests, stats %+v", len(reqs), st)
	}
	var nums []int
	for _, m := range st.FirstBad {
		nums = append(nums, m.Line)
	}
	if !slices.Equal(nums, []int{2, 4, 5, 6, 7, 8}) {
		t.Errorf("malformed lines %v", nums)
	}
	msg := st.BadLines()
	for _, want := range []string{"6 malformed line(s)", "line 4: no hash_ids", "line 6: 4 hash_ids but input_length 1100 is 3 blocks of 512 tokens", "line 8: a alibaba line in a mooncake trace", "line 5: input_length -3"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}

// TestReaderStopsOnCancel: a trace whose lines after the first hold no
// request (blank) gives up on a context cancelled while it reads them,
// within a few thousand lines: Ctrl-C on a huge file of such lines took
// effect only at its end. The trace is a FIFO fed on after the cancel.
func TestReaderStopsOnCancel(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	const blanks, chunks = 64 << 10, 256 // 16 Mi blank lines in all
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		f.Write(lines(mooncake(0, 10, "1")))
		chunk := bytes.Repeat([]byte("\n"), blanks)
		for i := range chunks {
			if i == 4 {
				cancel()
			}
			if _, err := f.Write(chunk); err != nil {
				return // the reader gave up and closed the FIFO
			}
		}
	}()
	r, err := Open(path, Options{Reorder: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.NextContext(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("NextContext = %v, want context.Canceled", err)
	}
	if n := r.Stats().Lines; n > 8*blanks {
		t.Errorf("read %d lines, want it to stop within a few thousand of the cancel (after %d)", n, 4*blanks)
	}
}

// TestReaderSessionIDs checks that a session_id is one session whatever
// the form of its text: 5 and "5" are one (as idText writes both "5"),
// "05", "-0" and "s" each another; -0 is 0.
func TestReaderSessionIDs(t *testing.T) {
	t.Parallel()
	ids := []string{`5`, `"5"`, `"05"`, `"-0"`, `0`, `"s"`, `-7`, `"-7"`, `1234567890123456789`, `"1234567890123456789"`, `-0`}
	want := []int{0, 0, 1, 2, 3, 4, 5, 5, 6, 6, 3}
	var ls []string
	for i, id := range ids {
		ls = append(ls, `{"timestamp":`+itoa(i)+`,"input_length":10,"hash_ids":[1],"session_id":`+id+`}`)
	}
	reqs, st := readAll(t, lines(ls...), Options{})
	if st.Sessions != 7 {
		t.Errorf("%d sessions, want 7", st.Sessions)
	}
	for i, r := range reqs {
		if r.Session != want[i] {
			t.Errorf("session_id %s: session %d, want %d", ids[i], r.Session, want[i])
		}
	}
}
