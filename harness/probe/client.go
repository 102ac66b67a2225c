package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// A Client talks to one OpenAI-compatible (vLLM) server.
type Client struct {
	Base    string       // "http://host:port", no trailing slash
	HTTP    *http.Client // nil: a client without a global timeout
	Timeout time.Duration

	simulated atomic.Bool

	// salt is 0 while unknown, 1 when the server took cache_salt, -1 when
	// it refused it with 400 (then requests go without).
	salt atomic.Int32
}

// NewClient returns a client for the server at endpoint ("http://h:p",
// optionally ending in /v1). Each request is bounded by timeout.
func NewClient(endpoint string, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q is not an http(s) URL", endpoint)
	}
	base := strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/")
	base = strings.TrimSuffix(base, "/v1")
	return &Client{Base: base, HTTP: &http.Client{}, Timeout: timeout}, nil
}

func (c *Client) http() *http.Client {
	if c.HTTP == nil {
		return http.DefaultClient
	}
	return c.HTTP
}

// A Model is one entry of GET /v1/models.
type Model struct {
	ID          string `json:"id"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"`
}

// Models lists the served models.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/v1/models", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /v1/models: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/models: %w", statusError(resp))
	}
	if resp.Header.Get("X-Kvtier-Simulated") == "1" {
		c.simulated.Store(true)
	}
	var body struct {
		Data []Model `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET /v1/models: %w", err)
	}
	return body.Data, nil
}

// PickModel returns the entry of models named want, or the first entry
// when want is empty. A name that is not listed comes back with only its
// ID set. ok is false when there is no model to name: want is empty and
// so is models.
func PickModel(models []Model, want string) (m Model, ok bool) {
	for _, e := range models {
		if e.ID != "" && (want == "" || e.ID == want) {
			return e, true
		}
	}
	return Model{ID: want}, want != ""
}

// Metrics scrapes GET /metrics and parses it for model.
func (c *Client) Metrics(ctx context.Context, model string) (Snapshot, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/metrics", nil)
	if err != nil {
		return Snapshot{}, err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return Snapshot{}, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Snapshot{}, fmt.Errorf("GET /metrics: %w", statusError(resp))
	}
	return ParseMetrics(resp.Body, model)
}

func (c *Client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.Timeout > 0 {
		return context.WithTimeout(ctx, c.Timeout)
	}
	return context.WithCancel(ctx)
}

// The OpenAI APIs a request can go to.
const (
	APICompletions = "completions" // POST /v1/completions, a prompt of token ids
	APIChat        = "chat"        // POST /v1/chat/completions, one user message
)

// APIs lists the accepted values of Request.API.
var APIs = []string{APICompletions, APIChat}

// A Request is one generation request: a prompt of token ids to
// /v1/completions, or a user message to /v1/chat/completions.
type Request struct {
	API    string // APICompletions ("" too) or APIChat
	Model  string
	Prompt []int  // completions
	Text   string // chat: the user message
	// PromptTokens is the prompt's length as far as the sender knows it
	// (a chat message's, after the template); not sent.
	PromptTokens int
	MaxTokens    int
	Salt         string         // cache_salt; "" for none
	Stream       bool           // stream with include_usage
	KVParams     map[string]any // kv_transfer_params; nil for none
	RequestID    string         // X-Request-Id
	// CountTokens asks a streamed request for real token counts:
	// continuous_usage_stats and return_token_ids (servers that do not
	// know them ignore them, and the stream falls back to chunks).
	CountTokens bool
	Header      map[string]string // extra headers (X-data-parallel-rank)
}

// Chat reports whether r goes to the chat API.
func (r Request) Chat() bool { return r.API == APIChat }

// path is the endpoint r is posted to.
func (r Request) path() string {
	if r.Chat() {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

func (r Request) body(withSalt bool) ([]byte, error) {
	b := map[string]any{
		"model":       r.Model,
		"max_tokens":  r.MaxTokens,
		"temperature": 0,
		"ignore_eos":  true,
		"stream":      r.Stream,
	}
	if r.Chat() {
		b["messages"] = []map[string]string{{"role": "user", "content": r.Text}}
	} else {
		b["prompt"] = r.Prompt
	}
	if r.Stream {
		opts := map[string]any{"include_usage": true}
		if r.CountTokens {
			opts["continuous_usage_stats"] = true
			b["return_token_ids"] = true
		}
		b["stream_options"] = opts
	}
	if withSalt && r.Salt != "" {
		b["cache_salt"] = r.Salt
	}
	if r.KVParams != nil {
		b["kv_transfer_params"] = r.KVParams
	}
	return json.Marshal(b)
}

// An HTTPError is a response with a status other than 200.
type HTTPError struct {
	Status  int
	Message string // the error body's message, or the body's start
}

// Error says the status and, when there is one, the server's message.
func (e *HTTPError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
}

func statusError(resp *http.Response) *HTTPError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	e := &HTTPError{Status: resp.StatusCode}
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(b, &body) == nil {
		var inner apiError
		switch {
		case len(body.Error) > 0 && json.Unmarshal(body.Error, &inner) == nil && inner.Message != "":
			e.Message = inner.Message
		case body.Message != "":
			e.Message = body.Message
		}
	}
	if e.Message == "" {
		e.Message = clip(strings.TrimSpace(string(b)), 200)
	}
	return e
}

// post sends r's body and returns the response, retrying once without
// cache_salt when the server refuses it with 400 (and remembering that).
// start is set just before the POST that produced the response.
func (c *Client) post(ctx context.Context, r Request, start *time.Time) (*http.Response, error) {
	withSalt := r.Salt != "" && c.salt.Load() >= 0
	retried := false
	for {
		b, err := r.body(withSalt)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+r.path(), bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if r.Stream {
			req.Header.Set("Accept", "text/event-stream")
		}
		if r.RequestID != "" {
			req.Header.Set("X-Request-Id", r.RequestID)
		}
		for k, v := range r.Header {
			req.Header.Set(k, v)
		}
		*start = time.Now()
		resp, err := c.http().Do(req)
		if err != nil {
			return nil, fmt.Errorf("POST %s: %w", r.path(), err)
		}
		if resp.StatusCode == http.StatusBadRequest && withSalt && c.salt.Load() == 0 {
			// Maybe the server does not take cache_salt (vLLM V0, other
			// engines): retry without; only a success proves it.
			resp.Body.Close()
			withSalt, retried = false, true
			continue
		}
		if resp.StatusCode != http.StatusOK {
			defer resp.Body.Close()
			return nil, statusError(resp)
		}
		if retried {
			c.salt.Store(-1)
		}
		if withSalt {
			c.salt.Store(1)
		}
		return resp, nil
	}
}

// Simulated reports whether the server said it is a kvtier sim (the
// X-Kvtier-Simulated header on /v1/models).
func (c *Client) Simulated() bool { return c.simulated.Load() }

// SaltSupported reports whether the server took cache_salt: 1 yes, -1 no
// (refused with 400), 0 not yet known.
func (c *Client) SaltSupported() int { return int(c.salt.Load()) }

// Stream sends r as a streamed request and reads the stream, timing it
// from just before the POST. onChoice, if not nil, sees each choice
// chunk as it arrives. The error is an *HTTPError for a refused request,
// a *ServerError for an error event, or a transport error.
func (c *Client) Stream(ctx context.Context, r Request, onChoice func(Chunk)) (Stream, error) {
	r.Stream = true
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var start time.Time
	resp, err := c.post(ctx, r, &start)
	if err != nil {
		return Stream{}, err
	}
	defer resp.Body.Close()
	s, err := ReadStream(resp.Body, func() time.Duration { return time.Since(start) }, onChoice)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w (timeout %s)", err, c.Timeout)
	}
	return s, err
}

// A Completion is a non-streamed response, as far as the probe needs it.
type Completion struct {
	KVParams map[string]any `json:"kv_transfer_params"`
	Usage    *Usage         `json:"usage"`
	Choices  []struct {
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Elapsed time.Duration `json:"-"`
}

// Complete sends r without streaming and returns the parsed response.
func (c *Client) Complete(ctx context.Context, r Request) (Completion, error) {
	r.Stream = false
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var start time.Time
	resp, err := c.post(ctx, r, &start)
	if err != nil {
		return Completion{}, err
	}
	defer resp.Body.Close()
	var out Completion
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Completion{}, fmt.Errorf("reading response: %w", err)
	}
	out.Elapsed = time.Since(start)
	var ce chunk
	if json.Unmarshal(b, &ce) == nil {
		if err := ce.err(); err != nil {
			return Completion{}, err
		}
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return Completion{}, fmt.Errorf("response is not JSON: %q", clip(string(b), 120))
	}
	return out, nil
}

// getJSON gets path and decodes a JSON body into v.
func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %w", path, statusError(resp))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// Version returns what GET /version says ({"version": "0.18.1"}).
func (c *Client) Version(ctx context.Context) (string, error) {
	var v struct {
		Version string `json:"version"`
	}
	if err := c.getJSON(ctx, "/version", &v); err != nil {
		return "", err
	}
	if v.Version == "" {
		return "", errors.New("GET /version: no version in the answer")
	}
	return v.Version, nil
}

// Tokenize counts the tokens of a chat request with one user message as
// the server will see it (vLLM's POST /tokenize with messages and the
// generation prompt).
func (c *Client) Tokenize(ctx context.Context, model, text string) (int, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	b, err := json.Marshal(map[string]any{
		"model": model, "messages": []map[string]string{{"role": "user", "content": text}},
		"add_generation_prompt": true,
	})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+"/tokenize", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST /tokenize: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("POST /tokenize: %w", statusError(resp))
	}
	var out struct {
		Count *int `json:"count"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Count == nil {
		return 0, fmt.Errorf("POST /tokenize: no count in the answer (%v)", err)
	}
	return *out.Count, nil
}
