package serving

import (
	"strings"
	"testing"
)

// sse writes events as a server-sent-events stream ending in [DONE].
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String() + "data: [DONE]\n\n"
}

// The stream shapes of the server families, as their sources write them
// (docs/servers.md), with the tokens each carries and how they count.
func TestTokenCounting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		maxTokens int
		tokens    int
		counting  string
		prompt    int // usage.prompt_tokens; 0: not checked
	}{
		{
			name: "vllm completions, token ids and continuous usage",
			in: sse(`{"choices":[{"text":" a","token_ids":[11]}],"usage":{"completion_tokens":1}}`,
				`{"choices":[{"text":" b c","token_ids":[12,13]}],"usage":{"completion_tokens":3}}`,
				`{"choices":[{"text":"","token_ids":[],"finish_reason":"length"}],"usage":{"completion_tokens":3}}`,
				`{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":3}}`),
			maxTokens: 3, tokens: 3, counting: CountTokenIDs,
		},
		{
			name: "vllm chat, continuous usage: role-only chunk and finish chunk carry none",
			in: sse(`{"choices":[{"delta":{"role":"assistant","content":""}}],"usage":{"completion_tokens":0}}`,
				`{"choices":[{"delta":{"content":" a b"}}],"usage":{"completion_tokens":2}}`,
				`{"choices":[{"delta":{"content":""},"finish_reason":"length"}],"usage":{"completion_tokens":2}}`),
			maxTokens: 2, tokens: 2, counting: CountUsage,
		},
		{
			name: "ollama: all-zero usage on every chunk is no running count",
			in: sse(`{"choices":[{"text":"a"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
				`{"choices":[{"text":"b"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
				`{"choices":[{"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
				`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`),
			maxTokens: 2, tokens: 2, counting: CountChunks,
		},
		{
			name: "llama.cpp completions: the finish chunk carries the usage and timings, no usage chunk",
			in: sse(`{"choices":[{"text":"x","index":0,"logprobs":null,"finish_reason":null}]}`,
				`{"choices":[{"text":"y","index":0,"logprobs":null,"finish_reason":null}]}`,
				`{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"usage":{"completion_tokens":2,"prompt_tokens":9,"total_tokens":11},"timings":{"cache_n":8,"prompt_n":1}}`),
			maxTokens: 2, tokens: 2, counting: CountChunks, prompt: 9,
		},
		{
			name: "llama.cpp chat: role-only delta with null content, empty finish delta, usage chunk with timings",
			in: sse(`{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}]}`,
				`{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"x"}}]}`,
				`{"choices":[{"finish_reason":"length","index":0,"delta":{}}]}`,
				`{"choices":[],"usage":{"completion_tokens":1,"prompt_tokens":9,"total_tokens":10},"timings":{"cache_n":0,"prompt_n":9}}`),
			maxTokens: 1, tokens: 1, counting: CountChunks, prompt: 9,
		},
		{
			name: "tgi completions: finish_reason \"\" until the last token, which carries the usage",
			in: sse(`{"id":"","choices":[{"finish_reason":"","index":0,"logprobs":null,"text":"a"}]}`,
				`{"id":"","choices":[{"finish_reason":"","index":0,"logprobs":null,"text":"b"}]}`,
				`{"id":"","choices":[{"finish_reason":"length","index":0,"logprobs":null,"text":"c"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`),
			maxTokens: 3, tokens: 3, counting: CountChunks, prompt: 9,
		},
		{
			name: "vllm with reasoning: the delta's reasoning carries a token",
			in: sse(`{"choices":[{"delta":{"role":"assistant","content":""}}]}`,
				`{"choices":[{"delta":{"reasoning":"hm"}}]}`,
				`{"choices":[{"delta":{"content":"a"},"finish_reason":"length"}]}`),
			maxTokens: 2, tokens: 2, counting: CountChunks,
		},
		{
			name: "sglang: null usage on chunks, finish chunk, usage chunk",
			in: sse(`{"choices":[{"index":0,"text":"a","finish_reason":null}],"usage":null}`,
				`{"choices":[{"index":0,"text":"b","finish_reason":"length","matched_stop":null}],"usage":null}`,
				`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":8}}}`),
			maxTokens: 2, tokens: 2, counting: CountChunks,
		},
		{
			name: "tgi chat: role-only delta, content, finish with usage",
			in: sse(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"a"},"finish_reason":null}],"usage":null}`,
				`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"b"},"finish_reason":"length"}],"usage":null}`,
				`{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`),
			maxTokens: 2, tokens: 2, counting: CountChunks,
		},
		{
			name: "trtllm-serve: continuous usage, finish chunk",
			in: sse(`{"choices":[{"index":0,"text":"a","finish_reason":null}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`,
				`{"choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`,
				`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`),
			maxTokens: 1, tokens: 1, counting: CountUsage,
		},
		{
			name:      "empty first chunk, then one token, max_tokens 1",
			in:        sse(`{"choices":[{"text":""}]}`, `{"choices":[{"text":"y"}]}`, `{"choices":[{"text":"","finish_reason":"length"}]}`),
			maxTokens: 1, tokens: 1, counting: CountChunks,
		},
		{
			name:      "usage that falls is no running count",
			in:        sse(`{"choices":[{"text":"a"}],"usage":{"completion_tokens":5}}`, `{"choices":[{"text":"b"}],"usage":{"completion_tokens":1}}`),
			maxTokens: 8, tokens: 6, counting: CountChunks,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := readStream(strings.NewReader(tt.in), fakeClock(), nil, TokenCap(tt.maxTokens))
			if err != nil {
				t.Fatal(err)
			}
			if s.Tokens() != tt.tokens || s.Counting != tt.counting {
				t.Errorf("tokens %d counted by %q, want %d by %q", s.Tokens(), s.Counting, tt.tokens, tt.counting)
			}
			if tt.prompt > 0 && (s.Usage == nil || s.Usage.PromptTokens != tt.prompt) {
				t.Errorf("usage %+v, want %d prompt tokens", s.Usage, tt.prompt)
			}
		})
	}
}

// A server that ignores max_tokens is cut off at the cap, with slack.
func TestTokenCapRefusesRunaway(t *testing.T) {
	t.Parallel()
	ev := make([]string, 40)
	for i := range ev {
		ev[i] = `{"choices":[{"text":"z"}]}`
	}
	_, err := readStream(strings.NewReader(sse(ev...)), fakeClock(), nil, TokenCap(2))
	if err == nil || !strings.Contains(err.Error(), "past its max_tokens") {
		t.Fatalf("err = %v, want a refusal past max_tokens", err)
	}
	if TokenCap(2) < 4 || TokenCap(0) != MaxStreamChunks {
		t.Errorf("TokenCap(2) = %d, TokenCap(0) = %d", TokenCap(2), TokenCap(0))
	}
}

// Figures no request can have are named, and neither the cached count
// nor the output length is taken from them.
func TestImpossibleFigures(t *testing.T) {
	t.Parallel()
	text := `{"choices":[{"text":"a"}]}`
	for _, tt := range []struct {
		name, last string
		sent, max  int
		want       string // in Impossible; "" none
		cached     int    // -1: Cached says nothing
		output     int
	}{
		{"fine", `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2,"total_tokens":102,"prompt_tokens_details":{"cached_tokens":96}}}`, 100, 2, "", 96, 2},
		{"cached above the prompt", `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2,"total_tokens":102,"prompt_tokens_details":{"cached_tokens":7265}}}`, 100, 2,
			"usage.prompt_tokens_details.cached_tokens 7265 above the prompt's 100 tokens", -1, 2},
		{"cache_n past any count", `{"choices":[],"timings":{"cache_n":1000000000000000,"prompt_n":4}}`, 100, 2, "timings.cache_n 1000000000000000 is not a count", -1, 2},
		{"cache_n above the prompt sent", `{"choices":[],"timings":{"cache_n":1000000000000,"prompt_n":4}}`, 100, 2, "timings.cache_n 1000000000000 above the prompt's 100 tokens", -1, 2},
		{"completion past max_tokens", `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":5000,"total_tokens":5100}}`, 100, 2,
			"completion_tokens 5000 past max_tokens 2 and its slack (20)", -1, 2},
		// Counts no server holds keep the request's timing: the figure is
		// impossible and left out, the stream is not failed.
		{"negative cached", `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":-5}}}`, 100, 2,
			"usage.prompt_tokens_details.cached_tokens -5 is not a count", -1, 2},
		{"cached of 1e18", `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1e18}}}`, 100, 2,
			"usage.prompt_tokens_details.cached_tokens 1e18 is not a count", -1, 2},
		{"cached past any count", `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1000000000000000000}}}`, 100, 2,
			"usage.prompt_tokens_details.cached_tokens 1000000000000000000 is not a count", -1, 2},
		{"cached fractional", `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":3.5}}}`, 100, 2,
			"usage.prompt_tokens_details.cached_tokens 3.5 is not a count", -1, 2},
		{"cached a string", `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":"NaN"}}}`, 100, 2,
			`usage.prompt_tokens_details.cached_tokens "NaN" is not a count`, -1, 2},
		{"details not an object", `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2,"prompt_tokens_details":7}}`, 100, 2,
			"usage.prompt_tokens_details 7 is not an object", -1, 2},
		{"negative completion", `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":-3}}`, 100, 2,
			"usage.completion_tokens -3 is not a count", -1, 2},
		{"prompt past any integer", `{"choices":[],"usage":{"prompt_tokens":1e300,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":96}}}`, 100, 2,
			"usage.prompt_tokens 1e300 is not a count", 96, 2},
		{"null details", `{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2,"prompt_tokens_details":null}}`, 100, 2, "", -1, 2},
	} {
		s, err := readStream(strings.NewReader(sse(text, text, tt.last)), fakeClock(), nil, TokenCap(tt.max))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		s.Sent, s.MaxTokens = tt.sent, tt.max
		if got := s.Impossible(); got != tt.want {
			t.Errorf("%s: Impossible() = %q, want %q", tt.name, got, tt.want)
		}
		n, ok := s.CachedTokens()
		if !ok {
			n = -1
		}
		if n != tt.cached || s.OutputTokens() != tt.output {
			t.Errorf("%s: cached %d, output %d; want %d, %d", tt.name, n, s.OutputTokens(), tt.cached, tt.output)
		}
	}
}
