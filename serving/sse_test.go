package serving

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// fakeClock returns a since function that advances 1 ms per event, so tests
// can tell which event set TTFT and E2E.
func fakeClock() func() time.Duration {
	var n time.Duration
	return func() time.Duration { n += time.Millisecond; return n }
}

const (
	chunkA = `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"","finish_reason":null}]}`
	chunkB = `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" hi","finish_reason":"length"}]}`
	usage  = `{"id":"cmpl-1","object":"text_completion","choices":[],"usage":{"prompt_tokens":1024,"completion_tokens":2,"total_tokens":1026,"prompt_tokens_details":{"cached_tokens":1008}}}`
)

func TestReadStream(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		wantErr    error  // errors.Is target
		wantErrSub string // substring of the error
		ttft, e2e  time.Duration
		chunks     int
		cached     int // -1: absent
		done       bool
		note       bool
	}{
		{
			name: "vllm shape",
			in:   "data: " + chunkA + "\n\ndata: " + chunkB + "\n\ndata: " + usage + "\n\ndata: [DONE]\n\n",
			ttft: 1 * time.Millisecond, e2e: 2 * time.Millisecond, chunks: 2, cached: 1008, done: true,
		},
		{
			name: "no space after data, CRLF, comments and event fields",
			in:   ": ping\r\nevent: message\r\ndata:" + chunkA + "\r\n\r\nid: 7\r\ndata:" + usage + "\r\n\r\ndata:[DONE]\r\n\r\n",
			ttft: 1 * time.Millisecond, e2e: 1 * time.Millisecond, chunks: 1, cached: 1008, done: true,
		},
		{
			name: "empty-text first chunk sets TTFT",
			in:   "data: " + chunkA + "\n\ndata: [DONE]\n\n",
			ttft: time.Millisecond, e2e: time.Millisecond, chunks: 1, cached: -1, done: true,
		},
		{
			name: "usage-only chunk times nothing",
			in:   "data: " + usage + "\n\ndata: " + chunkA + "\n\ndata: [DONE]\n\n",
			ttft: 2 * time.Millisecond, e2e: 2 * time.Millisecond, chunks: 1, cached: 1008, done: true,
		},
		{
			name: "no [DONE] after usage is tolerated with a note",
			in:   "data: " + chunkA + "\n\ndata: " + usage + "\n\n",
			ttft: time.Millisecond, e2e: time.Millisecond, chunks: 1, cached: 1008, note: true,
		},
		{
			name: "last event without blank line still counts",
			in:   "data: " + chunkA + "\n\ndata: " + usage,
			ttft: time.Millisecond, e2e: time.Millisecond, chunks: 1, cached: 1008, note: true,
		},
		{
			name:    "no [DONE] and no usage: truncated",
			in:      "data: " + chunkA + "\n\ndata: " + chunkB + "\n\n",
			wantErr: ErrTruncated, ttft: time.Millisecond, e2e: 2 * time.Millisecond, chunks: 2, cached: -1,
		},
		{
			name:    "empty stream",
			in:      "",
			wantErr: ErrNoChoice, cached: -1,
		},
		{
			name:    "[DONE] without any choice",
			in:      "data: " + usage + "\n\ndata: [DONE]\n\n",
			wantErr: ErrNoChoice, cached: 1008, done: true,
		},
		{
			name:       "error event, nested (newer vLLM)",
			in:         "data: " + chunkA + "\n\ndata: {\"error\":{\"object\":\"error\",\"message\":\"engine dead\",\"type\":\"InternalServerError\",\"code\":500}}\n\n",
			wantErrSub: "server error (code 500): engine dead", ttft: time.Millisecond, e2e: time.Millisecond, chunks: 1, cached: -1,
		},
		{
			name:       "error event, flat (older vLLM)",
			in:         "data: {\"object\":\"error\",\"message\":\"prompt too long\",\"type\":\"BadRequestError\",\"code\":400}\n\n",
			wantErrSub: "server error (code 400): prompt too long", cached: -1,
		},
		{
			name:       "error event, string",
			in:         "data: {\"error\":\"boom\"}\n\n",
			wantErrSub: "server error: boom", cached: -1,
		},
		{
			name:       "error field (older llama.cpp)",
			in:         "data: " + chunkA + "\n\nerror: {\"code\":500,\"message\":\"slot unavailable\",\"type\":\"server_error\"}\n\n",
			wantErrSub: "server error (code 500): slot unavailable", ttft: time.Millisecond, e2e: time.Millisecond, chunks: 1, cached: -1,
		},
		{
			name:       "not JSON",
			in:         "data: <html>502 Bad Gateway</html>\n\n",
			wantErrSub: "is not JSON", cached: -1,
		},
		{
			name: "null cached_tokens is absent",
			in:   "data: " + chunkA + "\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1,\"prompt_tokens_details\":null}}\n\ndata: [DONE]\n\n",
			ttft: time.Millisecond, e2e: time.Millisecond, chunks: 1, cached: -1, done: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Whole, and one byte per read (every split a network can make).
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				s, err := ReadStream(r, fakeClock(), nil)
				switch {
				case tt.wantErr != nil:
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("err = %v, want %v", err, tt.wantErr)
					}
				case tt.wantErrSub != "":
					if err == nil || !strings.Contains(err.Error(), tt.wantErrSub) {
						t.Fatalf("err = %v, want it to contain %q", err, tt.wantErrSub)
					}
				case err != nil:
					t.Fatalf("err = %v", err)
				}
				if s.TTFT != tt.ttft || s.E2E != tt.e2e || len(s.ChunkTimes) != tt.chunks {
					t.Errorf("ttft %v e2e %v chunks %d, want %v %v %d", s.TTFT, s.E2E, len(s.ChunkTimes), tt.ttft, tt.e2e, tt.chunks)
				}
				n, ok := s.Usage.CachedTokens()
				if !ok {
					n = -1
				}
				if n != tt.cached {
					t.Errorf("cached = %d, want %d", n, tt.cached)
				}
				if s.Done != tt.done {
					t.Errorf("done = %v, want %v", s.Done, tt.done)
				}
				if (s.Note != "") != tt.note {
					t.Errorf("note = %q, want note %v", s.Note, tt.note)
				}
			}
		})
	}
}

func TestReadStreamReadError(t *testing.T) {
	in := "data: " + chunkA + "\n\ndata: " + chunkB[:20]
	r := io.MultiReader(strings.NewReader(in), iotest.ErrReader(errors.New("connection reset by peer")))
	s, err := ReadStream(r, fakeClock(), nil)
	if err == nil || !strings.Contains(err.Error(), "connection reset by peer") {
		t.Fatalf("err = %v, want the read error", err)
	}
	if len(s.ChunkTimes) != 1 {
		t.Errorf("chunks = %d, want 1 (the one before the reset)", len(s.ChunkTimes))
	}
}

func TestEventReaderMultiline(t *testing.T) {
	er := NewEventReader(strings.NewReader("data: a\ndata: b\n\n\n\ndata:c\n\n"))
	var got []string
	for {
		d, err := er.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(d))
	}
	if strings.Join(got, "|") != "a\nb|c" {
		t.Errorf("events = %q", got)
	}
}

func FuzzReadStream(f *testing.F) {
	for _, s := range []string{
		"data: " + chunkA + "\n\ndata: " + usage + "\n\ndata: [DONE]\n\n",
		"data:" + chunkB + "\r\n\r\n",
		"data: {\"error\":{\"message\":\"x\",\"code\":500}}\n\n",
		"data: {\"object\":\"error\",\"message\":\"y\"}\n\n",
		": c\n\nevent: e\ndata: [DONE]",
		"data: {\"choices\":[{}],\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":null}}}",
		"data",
		"\n\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ReadStream(iotest.HalfReader(strings.NewReader(in)), fakeClock(), nil)
		if err == nil && len(s.ChunkTimes) == 0 {
			t.Fatalf("no error but no choice chunk: %+v", s)
		}
		if len(s.ChunkTimes) > 0 && (s.TTFT <= 0 || s.E2E < s.TTFT || s.TTFT != s.ChunkTimes[0]) {
			t.Fatalf("inconsistent times: %+v", s)
		}
		if err == nil && !s.Done && s.Usage == nil {
			t.Fatalf("complete stream without [DONE] or usage: %+v", s)
		}
	})
}

// A TPOT needs two output tokens in at least two chunks: tokens that all
// came in one chunk (a first chunk of no text, then everything) are no
// time per token.
func TestTPOTNeedsTwoChunks(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tt := range []struct {
		name   string
		chunks []Chunk
		want   time.Duration
		why    string
	}{
		{"one token a chunk", []Chunk{{10 * ms, 1}, {20 * ms, 1}, {30 * ms, 1}}, 10 * ms, ""},
		{"all in the last chunk", []Chunk{{10 * ms, 0}, {30 * ms, 16}}, 0, "all 16 output tokens came in one chunk"},
		{"one token", []Chunk{{10 * ms, 1}}, 0, "fewer than two output tokens"},
	} {
		s := Stream{Chunks: tt.chunks, TTFT: tt.chunks[0].At, E2E: tt.chunks[len(tt.chunks)-1].At}
		got, why := s.TPOT(false)
		if got != tt.want || !strings.Contains(why, tt.why) || (tt.why == "") != (why == "") {
			t.Errorf("%s: TPOT %v (%q), want %v (%q)", tt.name, got, why, tt.want, tt.why)
		}
	}
}
