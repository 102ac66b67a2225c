package servingtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// The families Server speaks (serving.Family* names).
const (
	VLLM     = "vllm"
	SGLang   = "sglang"
	LlamaCpp = "llamacpp"
	TGI      = "tgi"
	TRTLLM   = "trtllm"
)

// Server speaks one server family's OpenAI-compatible API as its source
// writes it (docs/servers.md cites the files), enough for kvtier's
// client: how it is told apart, its readiness and tokenizer endpoints,
// the prompt forms it takes and the shapes of its streams, the usage
// and the cache report they carry. It counts a token per token id, or
// per word of a text plus one (BOS), and reports as cached the longest
// prefix a prompt shares with one it saw before.
type Server struct {
	Family string // VLLM, SGLang, LlamaCpp, TGI or TRTLLM

	mu   sync.Mutex
	seen [][]string // the prompts seen, as tokens
}

// request is the part of a completion or chat request the fakes read.
type request struct {
	Prompt        json.RawMessage            `json:"prompt"`
	Messages      []struct{ Content string } `json:"messages"`
	MaxTokens     int                        `json:"max_tokens"`
	Stream        bool                       `json:"stream"`
	StreamOptions *struct {
		IncludeUsage    bool `json:"include_usage"`
		ContinuousUsage bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	ReturnTokenIDs bool `json:"return_token_ids"`
}

// ServeHTTP answers as the family does.
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","created":1,"owned_by":%q}]}`, f.ownedBy())
	case "/health":
		w.WriteHeader(http.StatusOK)
	case "/v1/completions", "/v1/chat/completions":
		f.complete(w, r)
	default:
		if !f.family(w, r) {
			http.NotFound(w, r)
		}
	}
}

// ownedBy is the owned_by of the family's /v1/models entries.
func (f *Server) ownedBy() string {
	switch f.Family {
	case TRTLLM:
		return "tensorrt_llm"
	case TGI:
		return "m" // the model id
	}
	return f.Family
}

// family answers the endpoints only the family has.
func (f *Server) family(w http.ResponseWriter, r *http.Request) bool {
	switch f.Family + " " + r.URL.Path {
	case VLLM + " /version", TRTLLM + " /version":
		fmt.Fprint(w, `{"version":"1.0.0"}`)
	case VLLM + " /tokenize":
		fmt.Fprint(w, `{"count":3,"max_model_len":4096,"tokens":[1,2,3],"token_strs":null}`)
	case VLLM + " /metrics":
		fmt.Fprint(w, "vllm:prefix_cache_queries_total{model_name=\"m\"} 0\nvllm:prefix_cache_hits_total{model_name=\"m\"} 0\n")
	case TRTLLM + " /metrics":
		fmt.Fprint(w, `[]`) // iteration stats, not Prometheus
	case SGLang + " /get_model_info":
		fmt.Fprint(w, `{"model_path":"m","tokenizer_path":"m","is_generation":true}`)
	case SGLang + " /get_server_info":
		fmt.Fprint(w, `{"model_path":"m","max_running_requests":8,"max_total_num_tokens":65536}`)
	case SGLang + " /health_generate":
	case LlamaCpp + " /props":
		fmt.Fprint(w, `{"default_generation_settings":{"n_ctx":4096},"total_slots":4,"build_info":"b1"}`)
	case LlamaCpp + " /tokenize":
		fmt.Fprint(w, `{"tokens":[1,2,3]}`)
	case TGI + " /info":
		fmt.Fprint(w, `{"model_id":"m","version":"3.3.4","router":"text-generation-router","max_total_tokens":4096}`)
	default:
		return false
	}
	return true
}

// tokens is the prompt as the fake counts it, or false when the family
// refuses its form (TGI: a string or strings only).
func (f *Server) tokens(req *request, chat bool) ([]string, bool) {
	if chat {
		var t []string
		for _, m := range req.Messages {
			t = append(t, strings.Fields(m.Content)...)
		}
		return append([]string{"<s>", "<user>"}, t...), true
	}
	var ids []int
	if json.Unmarshal(req.Prompt, &ids) == nil {
		if f.Family == TGI {
			return nil, false
		}
		t := make([]string, len(ids))
		for i, id := range ids {
			t[i] = fmt.Sprint(id)
		}
		return t, true
	}
	var text string
	if json.Unmarshal(req.Prompt, &text) != nil {
		return nil, false
	}
	return append([]string{"<s>"}, strings.Fields(text)...), true
}

// cached returns the longest prefix p shares with a prompt seen before,
// and remembers p.
func (f *Server) cached(p []string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	best := 0
	for _, q := range f.seen {
		n := 0
		for n < min(len(p), len(q)) && p[n] == q[n] {
			n++
		}
		best = max(best, n)
	}
	f.seen = append(f.seen, p)
	return best
}

func (f *Server) complete(w http.ResponseWriter, r *http.Request) {
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
		return
	}
	chat := r.URL.Path == "/v1/chat/completions"
	toks, ok := f.tokens(&req, chat)
	if !ok {
		// axum's Json rejection: the prompt matches no variant.
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, "Failed to deserialize the JSON body into the target type: prompt: data did not match any variant of untagged enum PromptDeserializer")
		return
	}
	st := stream{f: f, req: &req, chat: chat, prompt: len(toks), cached: f.cached(toks), n: max(req.MaxTokens, 1)}
	if !req.Stream {
		fmt.Fprintf(w, `{"choices":[{"index":0,"text":"x","finish_reason":"length"}],"usage":%s}`, st.usage(st.n, true))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range st.events() {
		fmt.Fprintf(w, "data: %s\n\n", e)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// stream writes the events of one streamed answer.
type stream struct {
	f                 *Server
	req               *request
	chat              bool
	prompt, cached, n int
}

func (s *stream) includeUsage() bool {
	return s.req.StreamOptions != nil && s.req.StreamOptions.IncludeUsage
}

func (s *stream) continuous() bool {
	return s.includeUsage() && s.req.StreamOptions.ContinuousUsage
}

// usage is a usage object after done tokens; details adds the cache
// report the family gives.
func (s *stream) usage(done int, details bool) string {
	u := fmt.Sprintf(`"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d`, s.prompt, done, s.prompt+done)
	switch {
	case !details:
	case s.f.Family == VLLM, s.f.Family == TRTLLM:
		u += fmt.Sprintf(`,"prompt_tokens_details":{"cached_tokens":%d}`, s.cached)
	case s.f.Family == SGLang && s.cached > 0: // omitted when 0
		u += fmt.Sprintf(`,"prompt_tokens_details":{"cached_tokens":%d}`, s.cached)
	}
	return "{" + u + "}"
}

// events are the stream's data events, [DONE] aside.
func (s *stream) events() []string {
	switch s.f.Family {
	case LlamaCpp:
		return s.llamaCpp()
	case TGI:
		return s.tgi()
	}
	return s.openAI()
}

// piece is the JSON of a choice carrying text, as a completion or a chat
// delta.
func (s *stream) piece(text string) string {
	if s.chat {
		return fmt.Sprintf(`"delta":{"content":%q}`, text)
	}
	return fmt.Sprintf(`"text":%q`, text)
}

// openAI is the shape of vLLM, SGLang and TensorRT-LLM: a role-only
// first chat chunk, one chunk per token (the last with finish_reason),
// a usage on every chunk with continuous_usage_stats, then the usage
// chunk with include_usage.
func (s *stream) openAI() []string {
	var ev []string
	null := ""
	if s.f.Family != VLLM { // pydantic dumps unset fields as null
		null = `,"usage":null`
	}
	cont := func(done int) string {
		if s.continuous() {
			return `,"usage":` + s.usage(done, s.f.Family == TRTLLM)
		}
		return null
	}
	if s.chat {
		ev = append(ev, fmt.Sprintf(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]%s}`, cont(0)))
	}
	for i := range s.n {
		finish := "null"
		if i == s.n-1 {
			finish = `"length"`
		}
		ids := ""
		if s.req.ReturnTokenIDs && s.f.Family != TRTLLM {
			ids = fmt.Sprintf(`,"token_ids":[%d]`, 100+i)
		}
		ev = append(ev, fmt.Sprintf(`{"choices":[{"index":0,%s,"finish_reason":%s%s}]%s}`, s.piece(" t"), finish, ids, cont(i+1)))
	}
	if s.includeUsage() {
		ev = append(ev, fmt.Sprintf(`{"choices":[],"usage":%s}`, s.usage(s.n, true)))
	}
	return ev
}

// llamaCpp is llama.cpp's shape (tools/server/server-task.cpp): a chat
// stream opens with a role-only delta whose content is null; a
// completion stream ends with a choice chunk of empty text carrying the
// finish_reason, the usage and the timings; a chat stream with a finish
// chunk of an empty delta and, with include_usage, a usage chunk
// carrying the timings.
func (s *stream) llamaCpp() []string {
	var ev []string
	timings := fmt.Sprintf(`"timings":{"cache_n":%d,"prompt_n":%d,"prompt_ms":1.5,"predicted_n":%d}`, s.cached, s.prompt-s.cached, s.n)
	if s.chat {
		ev = append(ev, `{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"object":"chat.completion.chunk"}`)
	}
	for range s.n {
		ev = append(ev, fmt.Sprintf(`{"choices":[{"index":0,%s,"logprobs":null,"finish_reason":null}]}`, s.piece("t")))
	}
	if !s.chat {
		return append(ev, fmt.Sprintf(`{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"object":"text_completion","usage":%s,%s}`, s.usage(s.n, false), timings))
	}
	last := fmt.Sprintf(`{"choices":[{"finish_reason":"length","index":0,"delta":{}}],"object":"chat.completion.chunk"`)
	if !s.includeUsage() {
		return append(ev, last+","+timings+"}")
	}
	return append(ev, last+"}", fmt.Sprintf(`{"choices":[],"object":"chat.completion.chunk","usage":%s,%s}`, s.usage(s.n, false), timings))
}

// tgi is TGI's shape (router/src/server.rs, router/src/chat.rs): a
// completion chunk per token whose finish_reason is "" until the last,
// which carries the finish_reason and the usage; a chat chunk per token
// whose delta names the role, the usage chunk only with include_usage.
func (s *stream) tgi() []string {
	var ev []string
	for i := range s.n {
		last := i == s.n-1
		if s.chat {
			finish, usage := "null", `,"usage":null`
			if last {
				finish = `"length"`
			}
			ev = append(ev, fmt.Sprintf(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"t"},"logprobs":null,"finish_reason":%s}]%s}`, finish, usage))
			continue
		}
		finish, usage := `""`, ""
		if last {
			finish, usage = `"length"`, `,"usage":`+s.usage(s.n, false)
		}
		ev = append(ev, fmt.Sprintf(`{"id":"","created":1,"choices":[{"finish_reason":%s,"index":0,"logprobs":null,"text":"t"}],"model":"m","system_fingerprint":"3.3.4-native"%s}`, finish, usage))
	}
	if s.chat && s.includeUsage() {
		ev = append(ev, fmt.Sprintf(`{"object":"chat.completion.chunk","choices":[],"usage":%s}`, s.usage(s.n, false)))
	}
	return ev
}
