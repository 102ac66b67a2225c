package vllmsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kvtier/kvtier/internal/wait"
)

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	m.HandleFunc("GET /v1/models", s.handleModels)
	m.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": s.cfg.Version})
	})
	m.HandleFunc("POST /tokenize", s.handleTokenize)
	m.HandleFunc("GET /query", s.handleBootstrapQuery)
	m.HandleFunc("GET /metrics", s.handleMetrics)
	m.HandleFunc("POST /v1/completions", s.handleCompletions)
	m.HandleFunc("POST /v1/chat/completions", s.handleChat)
	m.HandleFunc("POST "+kvBlocksPath, s.handleKVBlocks)
	s.handler = s.limit(m)
}

// ServeHTTP serves the OpenAI API, /metrics, /health and the P/D transfer
// endpoint. Every response says it is simulated.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Kvtier-Simulated", "1")
	// A request ends with the server: what it waits on, it waits on
	// through its context.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.life, cancel)()
	s.handler.ServeHTTP(w, r.WithContext(ctx))
}

// apiError is vLLM's ErrorResponse: {"error": {message, type, param, code}}.
type apiError struct {
	status  int
	message string
	param   string
}

func (e *apiError) Error() string { return e.message }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, message: fmt.Sprintf(format, args...)}
}

// errorType is the type vLLM gives an HTTP status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusNotImplemented:
		return "NotImplementedError"
	}
	return "InternalServerError"
}

func writeError(w http.ResponseWriter, e *apiError) {
	info := errorInfo{Message: e.message, Type: errorType(e.status), Code: e.status}
	if e.param != "" {
		info.Param = &e.param
	}
	writeJSON(w, e.status, errorResponse{Error: info})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	created := s.started.Unix()
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []any{map[string]any{
			"id":            s.cfg.Model,
			"object":        "model",
			"created":       created,
			"owned_by":      "vllm",
			"root":          s.cfg.Model,
			"parent":        nil,
			"max_model_len": s.cfg.MaxModelLen,
			"permission": []any{map[string]any{
				"id": fmt.Sprintf("modelperm-%016x", uint64(s.cfg.Seed)), "object": "model_permission",
				"created": created, "allow_create_engine": false, "allow_sampling": true,
				"allow_logprobs": true, "allow_search_indices": false, "allow_view": true,
				"allow_fine_tuning": false, "organization": "*", "group": nil, "is_blocking": false,
			}},
		}},
	})
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	e := s.eng
	e.mu.Lock()
	snap := snapshot{
		running: len(e.running),
		waiting: len(e.waiting) + len(e.loading),
		usage:   e.usage(),
		c:       e.m,
	}
	snap.c.ttft.counts = append([]uint64(nil), e.m.ttft.counts...)
	e.mu.Unlock()
	snap.lag, snap.lagMarks, snap.scrape = s.lag.scrape(time.Now())
	var b bytes.Buffer
	s.writeMetrics(&b, snap)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b.Bytes())
}

// genRequest holds the fields of /v1/completions and /v1/chat/completions
// the simulator reads. Others are accepted and ignored, as vLLM ignores
// unknown fields.
type genRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           *int            `json:"min_tokens"`
	N                   *int            `json:"n"`
	Temperature         *float64        `json:"temperature"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	CacheSalt           *string         `json:"cache_salt"`
	KVTransferParams    map[string]any  `json:"kv_transfer_params"`
	ReturnTokenIDs      *bool           `json:"return_token_ids"`
}

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

// decodeRequest reads a JSON body into a genRequest.
func (s *Server) decodeRequest(w http.ResponseWriter, r *http.Request) (*genRequest, *apiError) {
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		return nil, aerr
	}
	var req genRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("JSON decode error: %v", err)
	}
	return &req, nil
}

// checkCommon validates the fields both endpoints share.
func (s *Server) checkCommon(req *genRequest) *apiError {
	if req.Model != "" && req.Model != s.cfg.Model {
		return &apiError{status: http.StatusNotFound, message: fmt.Sprintf("The model `%s` does not exist.", req.Model), param: "model"}
	}
	if req.N != nil && *req.N != 1 {
		return badRequest("n must be 1 on the kvtier simulator, got %d", *req.N)
	}
	if req.Temperature != nil && *req.Temperature < 0 {
		return badRequest("temperature must be non-negative, got %g.", *req.Temperature)
	}
	if req.CacheSalt != nil && *req.CacheSalt == "" {
		return badRequest("Parameter 'cache_salt' must be a non-empty string if provided.")
	}
	if req.StreamOptions != nil && !req.Stream {
		return badRequest("Stream options can only be defined when `stream=True`.")
	}
	return nil
}

// promptTokens resolves a completions prompt: a string, a list of token
// ids, or a list holding one of those.
func (s *Server) promptTokens(raw json.RawMessage) ([]int, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("Field required: prompt")
	}
	var text string
	if raw[0] == '"' && json.Unmarshal(raw, &text) == nil {
		return s.tok.encode(text), nil
	}
	if ids, ok := tokenIDs(raw); ok {
		return ids, s.checkIDs(ids)
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return ids, s.checkIDs(ids)
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		if len(list) != 1 {
			return nil, badRequest("the kvtier simulator takes one prompt per request, got %d", len(list))
		}
		if json.Unmarshal(list[0], &text) == nil {
			return s.tok.encode(text), nil
		}
		if json.Unmarshal(list[0], &ids) == nil {
			return ids, s.checkIDs(ids)
		}
	}
	return nil, badRequest("prompt must be a string, a list of token ids, or a list of one of those")
}

// tokenIDs reads raw when it is a JSON array of token ids written plainly
// (digits, no leading zero, at most 9 of them), as clients send a
// prompt: a long prompt's ids read an order of magnitude faster than
// through encoding/json. ok is false for anything else, which
// encoding/json then reads or refuses.
func tokenIDs(raw []byte) (ids []int, ok bool) {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '[' {
		return nil, false
	}
	ids = make([]int, 0, len(raw)/6)
	for i = skipSpace(raw, i+1); i < len(raw) && raw[i] != ']'; {
		j := i
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
		}
		if j == i || j-i > 9 || (raw[i] == '0' && j-i > 1) {
			return nil, false
		}
		n, _ := strconv.Atoi(string(raw[i:j]))
		ids = append(ids, n)
		if i = skipSpace(raw, j); i < len(raw) && raw[i] == ',' {
			if i = skipSpace(raw, i+1); i < len(raw) && raw[i] == ']' {
				return nil, false // a trailing comma
			}
		} else if i < len(raw) && raw[i] != ']' {
			return nil, false
		}
	}
	return ids, i < len(raw) && skipSpace(raw, i+1) == len(raw)
}

// skipSpace returns the index of the first byte of b from i on that is
// not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func (s *Server) checkIDs(ids []int) *apiError {
	for _, id := range ids {
		if id < 0 || id >= s.cfg.Geometry.Vocab {
			return badRequest("Token id %d is out of vocabulary", id)
		}
	}
	return nil
}

// checkLengths applies max_tokens and max-model-len as vLLM does; def is
// the max_tokens when the request gives none (nil: fill the context).
func (s *Server) checkLengths(req *genRequest, prompt []int, def *int) (int, *apiError) {
	if len(prompt) == 0 {
		return 0, badRequest("The prompt cannot be empty.")
	}
	limit := s.cfg.MaxModelLen
	if len(prompt) >= limit {
		return 0, badRequest("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", limit, len(prompt))
	}
	mt := req.MaxTokens
	if mt == nil {
		mt = req.MaxCompletionTokens
	}
	if mt == nil {
		mt = def
	}
	n := limit - len(prompt)
	if mt != nil {
		n = *mt
		if n < 1 {
			return 0, badRequest("max_tokens must be at least 1, got %d.", n)
		}
		if len(prompt)+n > limit {
			return 0, badRequest("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", limit, len(prompt)+n, len(prompt), n)
		}
	}
	if req.MinTokens != nil && (*req.MinTokens < 0 || *req.MinTokens > n) {
		return 0, badRequest("min_tokens must be between 0 and max_tokens=%d, got %d.", n, *req.MinTokens)
	}
	// A request the pool cannot hold whole, prompt and completion, would
	// preempt itself for ever once it outgrew the pool (vLLM never sees
	// one: it refuses to start with a pool smaller than max_model_len).
	what, tokens := "prompt", len(prompt)+1
	if mt != nil {
		what, tokens = "prompt and max_tokens", len(prompt)+n
	}
	if need := (tokens + s.cfg.BlockSize - 1) / s.cfg.BlockSize; need > s.cfg.GPUBlocks {
		return 0, badRequest("the %s need %d KV blocks and the simulated GPU pool has %d", what, need, s.cfg.GPUBlocks)
	}
	return n, nil
}

type arrivalKey struct{}

// withArrival notes in r's context when its handler started.
func withArrival(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), arrivalKey{}, time.Now()))
}

// arrivedAt is when r's handler started (now if not noted).
func arrivedAt(r *http.Request) time.Time {
	if t, ok := r.Context().Value(arrivalKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}

// kind is what differs between the two endpoints.
type kind struct {
	chat       bool
	prefix     string // id prefix
	object     string // non-streaming object
	chunk      string // a stream chunk's object
	defaultMax int    // max_tokens when the request gives none (0: fill the context)
}

var (
	completionKind = kind{prefix: "cmpl-", object: "text_completion", chunk: "text_completion", defaultMax: 16}
	chatKind       = kind{chat: true, prefix: "chatcmpl-", object: "chat.completion", chunk: "chat.completion.chunk"}
)

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	s.handle(w, r, completionKind, func(req *genRequest) ([]int, *apiError) { return s.promptTokens(req.Prompt) })
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	s.handle(w, r, chatKind, s.chatPrompt)
}

// chatPrompt renders a chat request's messages with the chat template.
func (s *Server) chatPrompt(req *genRequest) ([]int, *apiError) {
	if len(req.Messages) == 0 {
		return nil, badRequest("Field required: messages")
	}
	prompt, err := s.tok.chat(req.Messages, true)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return prompt, nil
}

// handle checks a request of kind k as vLLM does, in vLLM's order (the
// body, the common fields, the prompt that promptOf makes of it, the
// lengths), and generates its answer or writes the first error.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, k kind, promptOf func(*genRequest) ([]int, *apiError)) {
	r = withArrival(r)
	req, aerr := s.decodeRequest(w, r)
	if aerr == nil {
		aerr = s.checkCommon(req)
	}
	var prompt []int
	if aerr == nil {
		prompt, aerr = promptOf(req)
	}
	var maxTokens int
	if aerr == nil {
		var def *int
		if k.defaultMax > 0 {
			def = &k.defaultMax
		}
		maxTokens, aerr = s.checkLengths(req, prompt, def)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	s.generate(w, r, req, k, prompt, maxTokens)
}

// generate runs one request through the engine and writes its response.
func (s *Server) generate(w http.ResponseWriter, hr *http.Request, req *genRequest, k kind, prompt []int, maxTokens int) {
	ctx := hr.Context()
	id := s.requestID(k.prefix, hr)
	salt := ""
	if req.CacheSalt != nil {
		salt = *req.CacheSalt
	}
	e := s.eng
	r := e.newRequest(id, prompt, maxTokens, salt)
	created := time.Now().Unix()

	kvp := parseKVParams(req.KVTransferParams)
	if kvp.doRemoteDecode {
		r.holdPeer = true
		done := s.addPending(id, hr.Header.Get("X-Request-Id"), kvp.transferID)
		defer done()
	}
	if kvp.doRemotePrefill {
		r.wantRemote = true
		r.remote = s.pullRemote(ctx, kvp, hr.Header.Get("X-Request-Id"), r.hashes)
	}

	// The front end's share: HTTP, tokenization, input processing, slower
	// the more requests it is already streaming.
	e.mu.Lock()
	load := len(e.running) + len(e.waiting) + len(e.loading)
	e.mu.Unlock()
	r.apiTime = e.cost.apiTime(len(prompt), load)
	// The simulator's own reading and checking of the request counts
	// toward the modeled front-end time, not on top of it.
	if err := wait.For(ctx, s.scaled(r.apiTime)-time.Since(arrivedAt(hr))); err != nil {
		return
	}
	s.submit(r)
	defer func() {
		e.mu.Lock()
		e.abort(r) // no-op once finished
		e.mu.Unlock()
	}()

	if req.Stream {
		s.streamResponse(ctx, w, req, k, id, created, r, prompt)
		return
	}
	s.respond(ctx, w, hr, k, id, created, r)
}

// respond writes the non-streaming response of r once it finishes; a
// producer's carries the kv_transfer_params of the KV it holds.
func (s *Server) respond(ctx context.Context, w http.ResponseWriter, hr *http.Request, k kind, id string, created int64, r *request) {
	var text strings.Builder
	var last event
	for evs, ok := range s.batches(ctx, r) {
		if !ok {
			return
		}
		for _, ev := range evs {
			text.WriteString(s.tok.decode(ev.token))
		}
		last = evs[len(evs)-1]
	}
	if last.finish == "" {
		return
	}
	usage := s.usage(last)
	finish := last.finish
	var kvParams map[string]any
	if r.holdPeer && last.blockIDs != nil {
		kvParams = s.producerParams(hr, id, last.blockIDs)
	}
	var resp any
	if k.chat {
		resp = chatResponse{
			responseHeader: s.header(k.object, id, created),
			Choices: []chatChoice{{
				Message:      chatMessageOut{Role: "assistant", Content: text.String(), ToolCalls: []any{}},
				FinishReason: &finish,
			}},
			Usage: usage, KVTransferParams: kvParams,
		}
	} else {
		resp = completionResponse{
			responseHeader: s.header(k.object, id, created),
			Choices:        []completionChoice{{completionText: completionText{Text: text.String(), FinishReason: &finish}}},
			Usage:          usage, KVTransferParams: kvParams,
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// batches yields r's events in the batches they were waiting in, as
// vLLM's output collector merges the outputs a slow stream has not taken
// yet into one, until r finishes; ok is false when the client or the
// server went away first.
func (s *Server) batches(ctx context.Context, r *request) func(func([]event, bool) bool) {
	return func(yield func([]event, bool) bool) {
		for {
			if evs := r.out.take(); len(evs) > 0 {
				if i := slices.IndexFunc(evs, func(ev event) bool { return ev.finish != "" }); i >= 0 {
					yield(evs[:i+1], true)
					return
				}
				if !yield(evs, true) {
					return
				}
			}
			select {
			case <-r.out.notify:
			case <-ctx.Done():
				yield(nil, false)
				return
			}
		}
	}
}

// usage is vLLM's UsageInfo; prompt_tokens_details only with
// EnablePromptTokensDetails and cached tokens, as vLLM omits it at zero.
func (s *Server) usage(last event) usageInfo {
	completion := last.completionTokens
	u := usageInfo{
		PromptTokens:     last.promptTokens,
		TotalTokens:      last.promptTokens + completion,
		CompletionTokens: completion,
	}
	if s.cfg.EnablePromptTokensDetails && last.cachedTokens > 0 {
		u.PromptTokensDetails = &promptDetails{CachedTokens: last.cachedTokens}
	}
	return u
}

// A streamWriter writes one response's server-sent events.
type streamWriter struct {
	w          http.ResponseWriter
	fl         http.Flusher
	rc         *http.ResponseController
	s          *Server
	req        *genRequest
	k          kind
	id         string
	created    int64
	r          *request
	prompt     []int
	continuous bool // continuous_usage_stats: usage so far on every chunk
	tokenIDs   bool // return_token_ids
	n          int  // tokens sent
}

// header is the opening of a completion or chat body of this server.
func (s *Server) header(object, id string, created int64) responseHeader {
	return responseHeader{ID: id, Object: object, Created: created, Model: s.cfg.Model}
}

// header is the opening of every chunk of the stream.
func (sw *streamWriter) header() responseHeader {
	return sw.s.header(sw.k.chunk, sw.id, sw.created)
}

func (sw *streamWriter) send(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	sw.deadline()
	if _, err := fmt.Fprintf(sw.w, "data: %s\n\n", b); err != nil {
		return false
	}
	return sw.rc.Flush() == nil || sw.fl == nil
}

// deadline gives the client the idle timeout to take the next write: a
// client that stops reading ends its request.
func (sw *streamWriter) deadline() {
	if d := sw.s.cfg.IdleTimeout; d > 0 {
		sw.rc.SetWriteDeadline(time.Now().Add(d))
	}
}

// running is the usage so far, on every chunk with continuous_usage_stats.
func (sw *streamWriter) running() *usageInfo {
	if !sw.continuous {
		return nil
	}
	return &usageInfo{PromptTokens: sw.r.promptLen, TotalTokens: sw.r.promptLen + sw.n, CompletionTokens: sw.n}
}

// chunk writes the events of one batch as one chunk (chat: after the role
// chunk when it is the first).
func (sw *streamWriter) chunk(evs []event) bool {
	first := sw.n == 0
	var text strings.Builder
	ids := make([]int, 0, len(evs))
	for _, ev := range evs {
		text.WriteString(sw.s.tok.decode(ev.token))
		ids = append(ids, ev.token)
	}
	var finish *string
	if f := evs[len(evs)-1].finish; f != "" {
		finish = &f
	}
	var tokIDs, promptIDs []int
	if sw.tokenIDs {
		tokIDs = ids
		if first {
			promptIDs = sw.prompt
		}
	}
	content := text.String()
	if !sw.k.chat {
		sw.n += len(evs)
		return sw.send(completionStreamResponse{
			responseHeader: sw.header(),
			Choices:        []completionStreamChoice{{completionText: completionText{Text: content, FinishReason: finish}, TokenIDs: tokIDs}},
			Usage:          sw.running(), PromptTokenIDs: promptIDs,
		})
	}
	if first {
		empty := ""
		if !sw.send(chatStreamResponse{
			responseHeader: sw.header(),
			Choices:        []chatStreamChoice{{Delta: deltaMessage{Role: "assistant", Content: &empty}}},
			Usage:          sw.running(), PromptTokenIDs: promptIDs,
		}) {
			return false
		}
	}
	sw.n += len(evs)
	c := chatStreamChoice{Delta: deltaMessage{Content: &content}, FinishReason: finish, TokenIDs: tokIDs}
	if finish != nil {
		c.StopReason = json.RawMessage("null")
	}
	return sw.send(chatStreamResponse{responseHeader: sw.header(), Choices: []chatStreamChoice{c}, Usage: sw.running()})
}

// streamResponse writes server-sent events as vLLM does: one chunk per
// batch of tokens (one token, unless the stream fell behind the engine),
// the finish reason on the last token's chunk, a usage chunk with no
// choices when asked for, then [DONE].
func (s *Server) streamResponse(ctx context.Context, w http.ResponseWriter, req *genRequest, k kind, id string, created int64, r *request, prompt []int) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	sw := &streamWriter{
		w: w, fl: fl, rc: http.NewResponseController(w), s: s, req: req, k: k, id: id, created: created, r: r, prompt: prompt,
		continuous: includeUsage && req.StreamOptions.ContinuousUsageStats,
		tokenIDs:   req.ReturnTokenIDs != nil && *req.ReturnTokenIDs,
	}
	var last event
	for evs, ok := range s.batches(ctx, r) {
		if !ok || !sw.chunk(evs) {
			return
		}
		last = evs[len(evs)-1]
	}
	if includeUsage && last.finish != "" {
		u := s.usage(last)
		var chunk any
		if k.chat {
			chunk = chatStreamResponse{responseHeader: sw.header(), Choices: []chatStreamChoice{}, Usage: &u}
		} else {
			chunk = completionStreamResponse{responseHeader: sw.header(), Choices: []completionStreamChoice{}, Usage: &u}
		}
		if !sw.send(chunk) {
			return
		}
	}
	sw.deadline()
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// producerParams are the kv_transfer_params a producer returns, in the
// NIXL connector's shape, naming this server as the side channel.
func (s *Server) producerParams(hr *http.Request, id string, blocks []int) map[string]any {
	host, port := hostPort(hr)
	return map[string]any{
		"do_remote_prefill": true,
		"do_remote_decode":  false,
		"remote_block_ids":  blocks,
		"remote_engine_id":  s.cfg.EngineID,
		"remote_request_id": id,
		"remote_host":       host,
		"remote_port":       port,
		"tp_size":           1,
	}
}

// hostPort is the address the client reached this server at: the Host
// header, with the scheme's port when it names none.
func hostPort(hr *http.Request) (string, int) {
	host, p, err := net.SplitHostPort(hr.Host)
	if err != nil {
		host, p = hr.Host, "80"
		if hr.TLS != nil {
			p = "443"
		}
	}
	port, _ := strconv.Atoi(p)
	return host, port
}

// tokenizeRequest is vLLM's TokenizeCompletionRequest or
// TokenizeChatRequest: a prompt or messages.
type tokenizeRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
}

// handleTokenize is vLLM's POST /tokenize: {count, max_model_len, tokens}.
func (s *Server) handleTokenize(w http.ResponseWriter, hr *http.Request) {
	var req tokenizeRequest
	body, aerr := s.readBody(w, hr)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, badRequest("JSON decode error: %v", err))
		return
	}
	if req.Model != "" && req.Model != s.cfg.Model {
		writeError(w, &apiError{status: http.StatusNotFound, message: fmt.Sprintf("The model `%s` does not exist.", req.Model), param: "model"})
		return
	}
	var ids []int
	var err error
	if req.Messages != nil {
		ids, err = s.tok.chat(req.Messages, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt)
		if err != nil {
			aerr = badRequest("%v", err)
		}
	} else {
		ids, aerr = s.promptTokens(req.Prompt)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": s.cfg.MaxModelLen, "tokens": ids, "token_strs": nil})
}
