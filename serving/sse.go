package serving

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// An EventReader reads the data of server-sent events from a stream the
// way an OpenAI-compatible server writes them: "data:" lines (with or
// without a space after the colon) ended by a blank line. Lines of one
// event are joined with "\n"; comments (":") and other fields (event, id,
// retry) are ignored, but for "error", whose value is returned as the
// event's data with ErrorField true. Reads may split lines anywhere;
// CRLF and LF both end a line. It looks like bufio.Scanner.
type EventReader struct {
	r    *bufio.Reader
	buf  []byte // the line being read
	data []byte
	has  bool // the current event has a data field
	// isErr: the current event came in an "error" field, as older
	// llama.cpp servers wrote a failure mid-stream; lastErr: the event
	// Next returned last did.
	isErr, lastErr bool
	err            error
}

// NewEventReader returns an EventReader reading from r.
func NewEventReader(r io.Reader) *EventReader {
	return &EventReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the data of the next event. At the end of the stream it
// returns io.EOF; an event cut short by the end (no blank line after it)
// is still returned first. Any other error is the reader's, and the event
// it interrupted is dropped. A line or an event longer than
// MaxEventBytes is a *TooLargeError.
func (e *EventReader) Next() ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	for {
		line, err := e.line()
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				if e.has {
					return e.take(), nil
				}
			} else if ferr := e.field(line); ferr != nil && err == nil {
				err = ferr
			}
		}
		if err != nil {
			e.err = err
			if err == io.EOF && e.has {
				return e.take(), nil // the last event, cut short by the end
			}
			e.take() // a read error: what came before it is incomplete
			return nil, err
		}
	}
}

// line reads one line, its end included, of at most MaxEventBytes.
func (e *EventReader) line() ([]byte, error) {
	e.buf = e.buf[:0]
	for {
		frag, err := e.r.ReadSlice('\n')
		if len(e.buf)+len(frag) > MaxEventBytes {
			return nil, &TooLargeError{What: "stream line", Limit: MaxEventBytes}
		}
		e.buf = append(e.buf, frag...)
		if err != bufio.ErrBufferFull {
			return e.buf, err
		}
	}
}

func (e *EventReader) take() []byte {
	d := e.data
	e.lastErr = e.isErr
	e.data, e.has, e.isErr = nil, false, false
	return d
}

// ErrorField reports whether the event Next returned last came in an
// "error" field rather than "data".
func (e *EventReader) ErrorField() bool { return e.lastErr }

// field adds a line's data field to the current event.
func (e *EventReader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment
	}
	name, value, _ := bytes.Cut(line, []byte(":"))
	switch string(name) {
	case "data":
	case "error":
		e.isErr = true
	default:
		return nil
	}
	value = bytes.TrimPrefix(value, []byte(" "))
	if len(e.data)+1+len(value) > MaxEventBytes {
		return &TooLargeError{What: "stream event", Limit: MaxEventBytes}
	}
	if e.has {
		e.data = append(e.data, '\n')
	}
	e.data = append(e.data, value...)
	e.has = true
	return nil
}

// Usage is the usage object of an OpenAI-compatible response.
type Usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// NotCounts says which figures the server sent that no count can be
	// (negative, fractional, past 2^40, not a number), "" when none:
	// each was left out (0, or no cached_tokens), so that nothing
	// believes it; Stream.Impossible reports it.
	NotCounts string `json:"-"`
}

// UnmarshalJSON decodes a usage object, leaving out each figure that
// no count can be and saying which in NotCounts: a server that reports
// nonsense still had its request measured.
func (u *Usage) UnmarshalJSON(b []byte) error {
	var raw struct {
		Prompt     json.RawMessage `json:"prompt_tokens"`
		Completion json.RawMessage `json:"completion_tokens"`
		Total      json.RawMessage `json:"total_tokens"`
		Details    json.RawMessage `json:"prompt_tokens_details"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var details struct {
		Cached json.RawMessage `json:"cached_tokens"`
	}
	var bad []string
	if isSet(raw.Details) && json.Unmarshal(raw.Details, &details) != nil {
		bad = append(bad, "usage.prompt_tokens_details "+clip(string(raw.Details), 40)+" is not an object")
	}
	*u = Usage{}
	u.PromptTokens, _ = countOf(raw.Prompt, "prompt_tokens", &bad)
	u.CompletionTokens, _ = countOf(raw.Completion, "completion_tokens", &bad)
	u.TotalTokens, _ = countOf(raw.Total, "total_tokens", &bad)
	if n, ok := countOf(details.Cached, "prompt_tokens_details.cached_tokens", &bad); ok {
		u.PromptTokensDetails = &struct {
			CachedTokens *int `json:"cached_tokens"`
		}{&n}
	}
	u.NotCounts = strings.Join(bad, "; ")
	return nil
}

// isSet reports whether a JSON value was sent and is not null.
func isSet(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// countOf is v as a count of tokens, ok when it was sent and is one;
// when it is not (negative, fractional, past maxServerCount, not a
// number) the reason is appended to bad.
func countOf(v json.RawMessage, name string, bad *[]string) (n int, ok bool) {
	if !isSet(v) {
		return 0, false
	}
	c, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || c < 0 || c > maxServerCount {
		*bad = append(*bad, fmt.Sprintf("usage.%s %s is not a count", name, clip(ServerText(string(v)), 40)))
		return 0, false
	}
	return int(c), true
}

// CachedTokens returns usage.prompt_tokens_details.cached_tokens and
// whether the server sent it.
func (u *Usage) CachedTokens() (int, bool) {
	if u == nil || u.PromptTokensDetails == nil || u.PromptTokensDetails.CachedTokens == nil {
		return 0, false
	}
	return *u.PromptTokensDetails.CachedTokens, true
}

// Timings is what llama.cpp's server reports of a request's prompt in
// its last chunk (tools/server/server-task.cpp, result_timings): CacheN
// prompt tokens reused from the slot's cache, PromptN evaluated.
type Timings struct {
	CacheN  *int `json:"cache_n"`
	PromptN *int `json:"prompt_n"`
}

// chunk is one streamed completion or chat chunk, or an error event.
type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta *struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"` // newer vLLM's name
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
		TokenIDs     []int   `json:"token_ids"` // return_token_ids
	} `json:"choices"`
	Usage   *Usage   `json:"usage"`
	Timings *Timings `json:"timings"`
	// vLLM streams errors as {"error": {...}} (newer) or as the error
	// response itself {"object": "error", "message": ..., "code": ...}.
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
	Message string          `json:"message"`
	Code    any             `json:"code"`
}

// hasText reports whether a chunk's first choice carries text: a
// completion's text, or a chat delta's content or reasoning. A role-only
// chunk (vLLM's first chat chunk) or a finish chunk carries none.
func (c *chunk) hasText() bool {
	ch := c.Choices[0]
	if ch.Text != "" {
		return true
	}
	d := ch.Delta
	return d != nil && (nonEmpty(d.Content) || nonEmpty(d.ReasoningContent) || nonEmpty(d.Reasoning))
}

func nonEmpty(s *string) bool { return s != nil && *s != "" }

// finished reports whether a chunk's first choice ends it: a
// finish_reason that is neither null nor "" (TGI sends "" until the end).
func (c *chunk) finished() bool { return nonEmpty(c.Choices[0].FinishReason) }

// apiError is the body of an OpenAI-style error.
type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

func (c *chunk) err() error {
	if len(c.Error) > 0 && string(c.Error) != "null" {
		var e apiError
		if json.Unmarshal(c.Error, &e) == nil && e.Message != "" {
			return serverError(e.Message, e.Code)
		}
		var s string
		if json.Unmarshal(c.Error, &s) == nil {
			return serverError(s, nil)
		}
		return serverError(string(c.Error), nil)
	}
	if c.Object == "error" {
		return serverError(c.Message, c.Code)
	}
	return nil
}

// notChunk is the error of event n, data, that did not decode as a
// chunk: not JSON, or JSON with a field of the wrong type (a count past
// any integer, a string for a number).
func notChunk(n int, data []byte, err error) error {
	if !json.Valid(data) {
		return fmt.Errorf("event %d is not JSON: %q", n, clip(string(data), 120))
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("event %d is not a chunk: its %s is a JSON %s: %q", n, te.Field, te.Value, clip(string(data), 120))
	}
	return fmt.Errorf("event %d is not a chunk (%v): %q", n, err, clip(string(data), 120))
}

// errorField is the error an "error:" event field reports (older
// llama.cpp servers: {"code", "message", "type"}).
func errorField(data []byte) error {
	var e apiError
	if json.Unmarshal(data, &e) == nil && e.Message != "" {
		return serverError(e.Message, e.Code)
	}
	return serverError(string(data), nil)
}

// serverError is the ServerError of a message and code a server sent,
// both as ServerText keeps them.
func serverError(msg string, code any) *ServerError {
	return &ServerError{Message: ServerText(msg), Code: ServerText(codeText(code))}
}

func codeText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		return fmt.Sprint(int64(x))
	default:
		return fmt.Sprint(x)
	}
}

// A ServerError is an error the server reported inside a stream or as a
// JSON error body.
type ServerError struct {
	Message string // as ServerText keeps it
	Code    string // the error's code field, often the HTTP status
}

// Error says the server's message and, when there is one, its code.
func (e *ServerError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("server error (code %s): %s", e.Code, e.Message)
	}
	return "server error: " + e.Message
}

// Errors that end a stream early. They are returned wrapped, with the
// number of events seen.
var (
	// ErrNoChoice: the stream ended before any chunk carried a choice, so
	// there is no time to first token.
	ErrNoChoice = errors.New("stream ended without a choice chunk")
	// ErrTruncated: choices arrived but the stream ended without [DONE]
	// and without the usage chunk, so E2E and the token counts are unknown.
	ErrTruncated = errors.New("stream ended without [DONE] and without usage")
)

// How the tokens of a stream were counted, best first.
const (
	// CountTokenIDs: return_token_ids gave each chunk's token ids.
	CountTokenIDs = "token_ids"
	// CountUsage: stream_options.continuous_usage_stats gave a running
	// usage.completion_tokens on every chunk, one that rose.
	CountUsage = "continuous_usage"
	// CountChunks: the server gave neither (or a usage that never rose,
	// as Ollama's all-zero one); every chunk with text counts as one
	// token, so chunks that bundle several undercount.
	CountChunks = "chunks"
)

// A Chunk is one choice chunk of a stream: when it arrived and how many
// tokens it carried.
type Chunk struct {
	At     time.Duration
	Tokens int
}

// A Stream is what one streamed completion delivered, timed against the
// clock started just before the request was sent (as vllm bench serve
// does: TTFT is the first chunk carrying a choice, even one with empty
// text; E2E the last choice chunk; the usage chunk times nothing).
type Stream struct {
	TTFT       time.Duration   // first choice chunk; 0 if none arrived
	E2E        time.Duration   // last choice chunk
	ChunkTimes []time.Duration // every choice chunk
	Chunks     []Chunk         // every choice chunk with its tokens
	Counting   string          // how Chunks' tokens were counted: CountUsage, CountTokenIDs or CountChunks
	Usage      *Usage          // from the usage chunk, nil if none
	Done       bool            // [DONE] arrived
	Events     int             // events read, [DONE] included
	Note       string          // a tolerated oddity, e.g. no [DONE] after usage
	// LastEvent is the arrival of the last data event before [DONE] (the
	// usage chunk when there is one): vllm bench's latency for chat.
	LastEvent time.Duration
	// Form is the form the prompt went in (FormTokenIDs, FormText,
	// FormChat) and Sent its tokens as sent (Request.Sent); set by
	// Client.Stream.
	Form string
	Sent int
	// Timings is llama.cpp's report of the prompt (cache_n, prompt_n),
	// from the last chunk that carried one; nil from other servers.
	Timings *Timings
	// MaxTokens is the request's max_tokens (set by Client.Stream): what
	// Impossible checks completion_tokens against; 0 unknown.
	MaxTokens int
}

// Where a stream's count of cached prompt tokens came from (Stream.Cached).
const (
	CachedFromUsage   = "usage.prompt_tokens_details.cached_tokens"
	CachedFromTimings = "timings.cache_n"
)

// CachedTokens is Cached without its source.
func (s *Stream) CachedTokens() (int, bool) {
	n, _, ok := s.Cached()
	return n, ok
}

// Cached returns the prompt tokens the server said it served from its
// prefix cache, and where it said so: usage.prompt_tokens_details.
// cached_tokens (vLLM with --enable-prompt-tokens-details, SGLang with
// --enable-cache-report, TensorRT-LLM) or llama.cpp's timings.cache_n.
// ok is false when the stream said nothing of it, or said a count that
// cannot be true (Impossible says which).
func (s *Stream) Cached() (n int, source string, ok bool) {
	n, source, ok = s.reportedCached()
	if ok && n > s.prompt() && s.prompt() > 0 {
		return 0, "", false
	}
	return n, source, ok
}

// reportedCached is what the server said of its cached tokens, believed
// or not; a cache_n outside any count is not taken.
func (s *Stream) reportedCached() (int, string, bool) {
	if n, ok := s.Usage.CachedTokens(); ok {
		return n, CachedFromUsage, true
	}
	if s.Timings != nil && s.Timings.CacheN != nil && *s.Timings.CacheN >= 0 && *s.Timings.CacheN <= maxServerCount {
		return *s.Timings.CacheN, CachedFromTimings, true
	}
	return 0, "", false
}

// prompt is the prompt's length: as the server counted it (usage), else
// as sent.
func (s *Stream) prompt() int {
	if s.Usage != nil && s.Usage.PromptTokens > 0 {
		return s.Usage.PromptTokens
	}
	return s.Sent
}

// Impossible says why figures the server reported of this stream cannot
// be true, "" when none: cached tokens above the prompt (a bug, or a
// proxy summing several requests), llama.cpp's cache_n outside any
// count, completion_tokens past max_tokens and the slack TokenCap
// allows, a usage figure that is no count (Usage.NotCounts). Cached and
// OutputTokens leave such figures out; a suite's row says the reason and
// verifies nothing by them.
func (s *Stream) Impossible() string {
	var why []string
	if n, src, ok := s.reportedCached(); ok && s.prompt() > 0 && n > s.prompt() {
		why = append(why, fmt.Sprintf("%s %d above the prompt's %d tokens", src, n, s.prompt()))
	}
	if t := s.Timings; t != nil && t.CacheN != nil && (*t.CacheN < 0 || *t.CacheN > maxServerCount) {
		why = append(why, fmt.Sprintf("timings.cache_n %d is not a count", *t.CacheN))
	}
	if s.Usage != nil && s.Usage.NotCounts != "" {
		why = append(why, s.Usage.NotCounts)
	}
	if s.completionImpossible() {
		why = append(why, fmt.Sprintf("completion_tokens %d past max_tokens %d and its slack (%d)", s.Usage.CompletionTokens, s.MaxTokens, TokenCap(s.MaxTokens)))
	}
	return strings.Join(why, "; ")
}

// completionImpossible reports a completion_tokens past what the
// request allowed, with TokenCap's slack.
func (s *Stream) completionImpossible() bool {
	return s.Usage != nil && s.MaxTokens > 0 && s.Usage.CompletionTokens > TokenCap(s.MaxTokens)
}

// PromptCheck compares the prompt tokens the server reported in usage
// with those sent (CheckPrompt, with a chat template's overhead allowed
// for a chat prompt).
func (s *Stream) PromptCheck() error {
	if s.Usage == nil {
		return nil
	}
	over := 0
	if s.Form == FormChat {
		over = chatOverhead
	}
	return CheckPrompt(s.Sent, s.Usage.PromptTokens, over)
}

// Tokens returns the number of tokens the chunks carried.
func (s *Stream) Tokens() int {
	n := 0
	for _, c := range s.Chunks {
		n += c.Tokens
	}
	return n
}

// OutputTokens is the output length vllm bench uses: usage's
// completion_tokens, else the tokens counted in the stream.
func (s *Stream) OutputTokens() int {
	if s.Usage != nil && s.Usage.CompletionTokens > 0 && !s.completionImpossible() {
		return s.Usage.CompletionTokens
	}
	return s.Tokens()
}

// TPOT is vllm bench serve's time per output token: (latency − TTFT) /
// (output tokens − 1), the latency being the last choice chunk for
// completions and the last chunk of any kind for chat (as its request
// functions time them). There is none (why says so) with fewer than two
// output tokens, or when they all came in one chunk: the time between
// the first chunk and that one is no time per token.
func (s *Stream) TPOT(chat bool) (d time.Duration, why string) {
	n := s.OutputTokens()
	if n < 2 || s.TTFT == 0 {
		return 0, "fewer than two output tokens"
	}
	carrying := 0
	for _, c := range s.Chunks {
		if c.Tokens > 0 {
			carrying++
		}
	}
	if carrying < 2 && len(s.Chunks) > 0 {
		return 0, fmt.Sprintf("TPOT unmeasurable: all %d output tokens came in one chunk", n)
	}
	lat := s.E2E
	if chat && s.LastEvent > lat {
		lat = s.LastEvent
	}
	return (lat - s.TTFT) / time.Duration(n-1), ""
}

// ITL returns vllm bench serve's inter-token latencies: the gaps between
// consecutive choice chunks (per chunk, not per token).
func (s *Stream) ITL() []time.Duration {
	var g []time.Duration
	for i := 1; i < len(s.ChunkTimes); i++ {
		g = append(g, s.ChunkTimes[i]-s.ChunkTimes[i-1])
	}
	return g
}

// tokenCounter counts the tokens of each choice chunk by the best means
// the stream offers: the chunk's token ids; else usage, once it has
// shown itself a running count (it rose); else one token per chunk with
// text, none for a chunk without (a role-only or a finish chunk).
type tokenCounter struct {
	prev       int  // running completion_tokens so far
	rising     bool // usage.completion_tokens rose: a running count
	withUsage  int  // choice chunks that carried a usage
	total      int  // tokens counted so far
	usage, ids int  // chunks counted by each means
	guessed    int  // chunks with text counted as one token each
	chunks     int  // choice chunks
}

// count returns the tokens choice chunk c carried. A usage on the chunk
// that finishes the stream, when no chunk before carried one, is the stream's final usage (llama.cpp's and TGI's
// completions put it there), not a running count: final says so, and
// the chunk is counted by its text.
func (tc *tokenCounter) count(c *chunk) (n int, final bool) {
	tc.chunks++
	ch := &c.Choices[0]
	if c.Usage != nil {
		final = tc.withUsage == 0 && c.finished() && ch.TokenIDs == nil
		tc.withUsage++
	}
	switch {
	case final:
		return tc.byText(c), true
	case ch.TokenIDs != nil:
		tc.running(c.Usage) // keep the running count current
		tc.ids++
		return len(ch.TokenIDs), false
	}
	if n, ok := tc.running(c.Usage); ok {
		tc.usage++
		return n, false
	}
	return tc.byText(c), false
}

// byText counts one token for a chunk with text, none for one without.
func (tc *tokenCounter) byText(c *chunk) int {
	if c.hasText() {
		tc.guessed++
		return 1
	}
	return 0
}

// running returns the tokens a chunk's usage adds to the running count,
// and whether usage is one: it must have risen, on this chunk or before,
// and never fallen.
func (tc *tokenCounter) running(u *Usage) (int, bool) {
	if u == nil {
		return 0, false
	}
	n := u.CompletionTokens - tc.prev
	switch {
	case n > 0:
		tc.prev, tc.rising = u.CompletionTokens, true
		return n, true
	case n == 0 && tc.rising:
		return 0, true
	}
	return 0, false
}

// method names how the stream's tokens were counted: the weakest means
// any chunk needed.
func (tc *tokenCounter) method() string {
	switch {
	case tc.chunks == 0:
		return ""
	case tc.guessed > 0 || tc.usage+tc.ids == 0:
		return CountChunks
	case tc.usage > 0:
		return CountUsage
	}
	return CountTokenIDs
}

// TokenCap is the most tokens a stream asked for maxTokens may carry
// before it is refused: a safety cap with slack for servers that count
// a token more or less (a final chunk, a stop token), not an exact
// count.
func TokenCap(maxTokens int) int {
	if maxTokens <= 0 || maxTokens > MaxStreamChunks {
		return MaxStreamChunks
	}
	return min(2*maxTokens+16, MaxStreamChunks)
}

// ReadStream reads a completion stream from r until [DONE] or the end,
// with since giving the time elapsed since the request was sent, called
// when each event arrives. onChoice, if not nil, is called for each choice
// chunk with its arrival time and the tokens it carried. It returns what
// arrived and an error if the stream does not hold a complete
// measurement:
//
//   - an error event ({"error": ...} or {"object": "error"}): a *ServerError;
//   - the stream ends with no choice chunk: ErrNoChoice;
//   - it ends without [DONE] after choices but before usage: ErrTruncated
//     (with include_usage the usage chunk is the last thing before [DONE],
//     so its absence means the stream was cut);
//   - it ends without [DONE] after the usage chunk: no error, Note says so;
//   - a read error (connection reset): that error;
//   - an event that is not JSON: an error quoting it.
//
// A stream without usage that ends with [DONE] is complete (the server
// ignored include_usage); Usage is nil.
//
// A stream that carries more than MaxStreamChunks choice chunks or more
// than MaxStreamChunks tokens is refused with an error.
func ReadStream(r io.Reader, since func() time.Duration, onChoice func(Chunk)) (s Stream, err error) {
	return readStream(r, since, onChoice, MaxStreamChunks)
}

// readStream is ReadStream refusing a stream of more than maxTokens
// tokens.
func readStream(r io.Reader, since func() time.Duration, onChoice func(Chunk), maxTokens int) (s Stream, err error) {
	var tc tokenCounter
	defer func() { s.Counting = tc.method() }()
	er := NewEventReader(r)
	for {
		data, err := er.Next()
		if err != nil {
			if err == io.EOF {
				return s, s.endWithoutDone()
			}
			if s.TTFT == 0 {
				return s, fmt.Errorf("reading stream after %d events: %w", s.Events, err)
			}
			return s, fmt.Errorf("reading stream after %d events (%d choice chunks): %w", s.Events, len(s.ChunkTimes), err)
		}
		t := since()
		s.Events++
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			s.Done = true
			if s.TTFT == 0 && len(s.ChunkTimes) == 0 {
				return s, fmt.Errorf("[DONE] after %d events: %w", s.Events, ErrNoChoice)
			}
			return s, nil
		}
		if len(data) == 0 {
			continue // keep-alive
		}
		if er.ErrorField() {
			return s, fmt.Errorf("after %d events: %w", s.Events-1, errorField(data))
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return s, notChunk(s.Events, data, err)
		}
		if err := c.err(); err != nil {
			return s, fmt.Errorf("after %d events: %w", s.Events-1, err)
		}
		if err := s.take(&c, t, &tc, maxTokens, onChoice); err != nil {
			return s, fmt.Errorf("event %d: %w", s.Events, err)
		}
	}
}

// take records chunk c, which arrived at t: its usage, timings and, for
// a choice chunk, its tokens as tc counts them.
func (s *Stream) take(c *chunk, t time.Duration, tc *tokenCounter, maxTokens int, onChoice func(Chunk)) error {
	if c.Timings != nil {
		s.Timings = c.Timings
	}
	s.LastEvent = t
	if len(c.Choices) == 0 {
		if c.Usage != nil {
			s.Usage = c.Usage
		}
		return nil
	}
	if len(s.ChunkTimes) >= MaxStreamChunks {
		return fmt.Errorf("stream carried more than %d choice chunks: refused", MaxStreamChunks)
	}
	n, final := tc.count(c)
	if final {
		s.Usage = c.Usage
	}
	if tc.total += n; tc.total > maxTokens {
		return fmt.Errorf("stream carried more than %d tokens, far past its max_tokens: refused", maxTokens)
	}
	s.choice(t, n, onChoice)
	return nil
}

// choice records a choice chunk that arrived at t with n tokens.
func (s *Stream) choice(t time.Duration, n int, onChoice func(Chunk)) {
	if len(s.ChunkTimes) == 0 {
		s.TTFT = t
		if s.TTFT <= 0 {
			s.TTFT = time.Nanosecond // a choice did arrive
		}
	}
	s.E2E = t
	s.ChunkTimes = append(s.ChunkTimes, t)
	c := Chunk{At: t, Tokens: n}
	s.Chunks = append(s.Chunks, c)
	if onChoice != nil {
		onChoice(c)
	}
}

func (s *Stream) endWithoutDone() error {
	switch {
	case len(s.ChunkTimes) == 0:
		return fmt.Errorf("after %d events: %w", s.Events, ErrNoChoice)
	case s.Usage == nil:
		return fmt.Errorf("after %d events (%d choice chunks): %w", s.Events, len(s.ChunkTimes), ErrTruncated)
	}
	s.Note = "stream ended without [DONE] after the usage chunk"
	return nil
}

// clip cuts s, made valid UTF-8, to its first n bytes, at a character's
// start, marking the cut with "...".
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
