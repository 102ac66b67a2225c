package serving

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kvtier/kvtier/clock"
	"github.com/kvtier/kvtier/redact"
)

// A Client talks to one OpenAI-compatible (vLLM) server.
type Client struct {
	Base    string       // "http://host:port", no trailing slash, no credentials
	HTTP    *http.Client // nil: a client without a global timeout
	Timeout time.Duration
	// Idle, when positive, fails a request whose server sends nothing for
	// that long: no response headers, or no byte of the answer once it
	// has begun (an *IdleError). A generation's answer may begin only
	// after its prefill, however long: until its first byte, the server
	// must instead answer GET /v1/models within Idle, asked every Idle.
	Idle time.Duration

	// user holds the endpoint's credentials, sent as HTTP basic auth.
	user *url.Userinfo

	simulated atomic.Bool

	// salt is 0 while unknown, 1 when the server took cache_salt, -1 when
	// it refused it with 400 (then requests go without).
	salt atomic.Int32
	// form is 0 while unknown, 1 when the server took a prompt of token
	// ids, -1 when it refused one and took text (then completions
	// prompts are spelled as text).
	form atomic.Int32
	cal  *calibrations
	brk  *breaker
	// fam is the server's family once DetectFamily told it.
	fam atomic.Pointer[Family]
	// noMetrics holds the answer of a GET /metrics that said the server
	// has none (404): later scrapes return it without asking.
	noMetrics atomic.Pointer[error]
}

// NewClient returns a client for the server at endpoint ("http://h:p",
// optionally ending in /v1; "http://user:password@h:p" sends the
// credentials as HTTP basic auth). Each request is bounded by timeout.
func NewClient(endpoint string, timeout time.Duration) (*Client, error) {
	u, err := parseURL(endpoint)
	if err != nil {
		return nil, err
	}
	base := strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/")
	base = strings.TrimSuffix(base, "/v1")
	return &Client{Base: base, HTTP: &http.Client{CheckRedirect: sameHost}, Timeout: timeout, user: u.User, cal: &calibrations{}, brk: &breaker{}}, nil
}

// CheckURL says whether endpoint is a server's http(s) URL, as NewClient
// takes it.
func CheckURL(endpoint string) error {
	_, err := parseURL(endpoint)
	return err
}

// parseURL parses endpoint, an http(s) URL with a host (a name of at
// most 253 characters) and, if given, a port from 1 to 65535.
func parseURL(endpoint string) (*url.URL, error) {
	endpoint = strings.TrimSpace(endpoint)
	u, err := url.Parse(endpoint)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		hint := ""
		if _, perr := url.Parse("http://" + endpoint); perr == nil && !strings.Contains(endpoint, "://") {
			hint = fmt.Sprintf(" (did you mean %q?)", clip("http://"+redact.URL(endpoint), 80))
		}
		return nil, fmt.Errorf("endpoint %q is not an http(s) URL%s", clip(redact.URL(endpoint), 80), hint)
	case len(u.Hostname()) > 253:
		return nil, fmt.Errorf("endpoint %q: its host name is %d characters long, longer than any (253)", clip(redact.URL(endpoint), 80), len(u.Hostname()))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("endpoint %q: port %s is not a port (1 to 65535)", clip(redact.URL(endpoint), 80), clip(p, 20))
		}
	}
	return u, nil
}

// NewClientWith returns NewClient(endpoint, timeout) with Idle set to idle
// and, when hc is not nil, hc as its HTTP client (with its own redirect
// policy): the client a measuring run builds from its configuration.
func NewClientWith(endpoint string, timeout, idle time.Duration, hc *http.Client) (*Client, error) {
	c, err := NewClient(endpoint, timeout)
	if err != nil {
		return nil, err
	}
	c.Idle = idle
	if hc != nil {
		c.HTTP = hc
	}
	return c, nil
}

// sameHost follows a redirect within the server's host, as net/http
// does, and refuses one to another host: kvtier measures the server it
// was given, and its rows name that server.
func sameHost(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Host != via[0].URL.Host {
		return errors.New("redirected to another host: kvtier measures only the server it is given (give that URL if its server is the one to measure)")
	}
	return nil
}

// NewMeasuringClient returns NewClientWith(endpoint, timeout, idle, hc)
// with its breaker set to maxTimeouts (SetMaxTimeouts): the client a
// measuring run sends its requests through.
func NewMeasuringClient(endpoint string, timeout, idle time.Duration, hc *http.Client, maxTimeouts int) (*Client, error) {
	c, err := NewClientWith(endpoint, timeout, idle, hc)
	if err != nil {
		return nil, err
	}
	c.SetMaxTimeouts(maxTimeouts)
	return c, nil
}

// With returns a client of the same server and credentials whose
// requests are bounded by timeout and idle (0: none).
func (c *Client) With(timeout, idle time.Duration) *Client {
	d := &Client{Base: c.Base, HTTP: c.HTTP, Timeout: timeout, Idle: idle, user: c.user, cal: c.cal, brk: c.brk}
	d.form.Store(c.form.Load())
	d.salt.Store(c.salt.Load())
	d.fam.Store(c.fam.Load())
	d.noMetrics.Store(c.noMetrics.Load())
	return d
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

// Models lists the served models, their names and owners as ServerText
// keeps them (a name longer than MaxServerText is measured by naming it
// with --served-model-name).
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	var body struct {
		Data []Model `json:"data"`
	}
	h, err := c.GetJSON(ctx, "/v1/models", &body)
	if err != nil {
		return nil, err
	}
	if h.Get("X-Kvtier-Simulated") == "1" {
		c.simulated.Store(true)
	}
	for i := range body.Data {
		m := &body.Data[i]
		m.ID, m.OwnedBy = ServerText(m.ID), ServerText(m.OwnedBy)
	}
	return body.Data, nil
}

// pickModel returns the entry of models named want, or the first entry
// when want is empty. A name that is not listed comes back with only its
// ID set. ok is false when there is no model to name: want is empty and
// so is models.
func pickModel(models []Model, want string) (m Model, ok bool) {
	for _, e := range models {
		if e.ID != "" && (want == "" || e.ID == want) {
			return e, true
		}
	}
	return Model{ID: want}, want != ""
}

// modelIDs returns the distinct model ids listed.
func modelIDs(models []Model) []string {
	var ids []string
	for _, m := range models {
		if m.ID != "" && !slices.Contains(ids, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// ServedModel lists the served models and picks want, or the first one
// when want is "". A server that cannot be listed is an error wrapping
// ErrUnreachable; one that lists no model (and none is named) is an
// error too. A model owned by kvtier marks the client Simulated, as the
// simulator's header does.
func (c *Client) ServedModel(ctx context.Context, want string) (Model, error) {
	models, err := c.Models(ctx)
	if err != nil {
		return Model{}, fmt.Errorf("%w: %s: %w", ErrUnreachable, c.Base, err)
	}
	m, ok := pickModel(models, want)
	if !ok {
		return Model{}, fmt.Errorf("%s serves no model (GET /v1/models is empty)", c.Base)
	}
	if ids := modelIDs(models); want == "" && len(ids) > 1 {
		return Model{}, fmt.Errorf("%s serves %d models (%s): name the one to measure with --served-model-name", c.Base, len(ids), ServerText(strings.Join(ids, ", ")))
	}
	if strings.Contains(strings.ToLower(m.OwnedBy), "kvtier") {
		c.simulated.Store(true)
	}
	return m, nil
}

// Metrics scrapes GET /metrics and parses it for model. A server that
// answered 404 is not asked again: its error comes back at once. An
// answer in JSON (TensorRT-LLM's iteration stats) is an error saying so.
func (c *Client) Metrics(ctx context.Context, model string) (Snapshot, error) {
	if err := c.noMetrics.Load(); err != nil {
		return Snapshot{}, *err
	}
	x := c.begin(ctx)
	defer x.end()
	resp, err := c.send(x, http.MethodGet, "/metrics", nil, nil, true, MaxMetricsBytes)
	var he *HTTPError
	if errors.As(err, &he) && he.Status == http.StatusNotFound {
		err = fmt.Errorf("%w (the server has no Prometheus metrics; not asked again)", err)
		c.noMetrics.Store(&err)
	}
	if err != nil {
		return Snapshot{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body) // the whole text first: parsing is slower than reading
	if err != nil {
		return Snapshot{}, fmt.Errorf("GET /metrics: %w", err)
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '[' || t[0] == '{') {
		return Snapshot{}, errors.New("GET /metrics answered JSON, not Prometheus text (TensorRT-LLM's iteration stats?)")
	}
	return ParseMetrics(bytes.NewReader(b), model)
}

func (c *Client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.Timeout > 0 {
		return context.WithTimeout(ctx, c.Timeout)
	}
	return context.WithCancel(ctx)
}

// An exchange is one request under way: its context, bounded by the
// client's timeout and cancelled by its idle watch.
type exchange struct {
	ctx    context.Context
	w      *watch
	cancel context.CancelFunc
}

// begin starts an exchange; end it when its answer is read.
func (c *Client) begin(ctx context.Context) *exchange {
	ctx, cancel := c.bound(ctx)
	ctx, w := c.watch(ctx)
	return &exchange{ctx: ctx, w: w, cancel: cancel}
}

func (x *exchange) end() {
	x.w.stop()
	x.cancel()
}

// send sends one request of x with body (nil for none) and the extra
// headers hdr, and returns the response whose body is read through x's
// watch and a cap of limit bytes. waitHeaders says whether the idle
// timeout covers the wait for the response headers; when it does not (a
// generation, whose answer may begin only after the prefill), the server
// must answer GET /v1/models meanwhile. A status other than 200 is an
// *HTTPError. Errors name the method and path.
func (c *Client) send(x *exchange, method, path string, body []byte, hdr map[string]string, waitHeaders bool, limit int64) (*http.Response, error) {
	op := method + " " + path
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(x.ctx, method, c.Base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if c.user != nil {
		pw, _ := c.user.Password()
		req.SetBasicAuth(c.user.Username(), pw)
	}
	if waitHeaders {
		x.w.arm("response headers")
	} else {
		x.w.await(c.ping)
	}
	resp, err := c.http().Do(req)
	x.w.data()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, x.w.err(err))
	}
	resp.Body = readCloser{newBody(resp.Body, x.w, limit, op+" body"), resp.Body}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, fmt.Errorf("%s: %w", op, statusError(resp))
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %w", op, ErrHTML)
	}
	return resp, nil
}

// ErrHTML: a server answered 200 with an HTML page, as a proxy's login or
// error page does, where the API answers JSON, an event stream or
// Prometheus text.
var ErrHTML = errors.New("the server answered HTML (a proxy's login or error page?), not the OpenAI API: check --base-url")

// ping asks the server for GET /v1/models: whether it answers at all.
func (c *Client) ping(ctx context.Context) error {
	var v json.RawMessage
	_, err := c.GetJSON(ctx, "/v1/models", &v)
	return err
}

// readCloser reads through one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

// The OpenAI APIs a request can go to.
const (
	APICompletions = "completions" // POST /v1/completions, a prompt of token ids
	APIChat        = "chat"        // POST /v1/chat/completions, one user message
)

// APIs lists the accepted values of Request.API.
var APIs = []string{APICompletions, APIChat}

// A Request is one generation request: a prompt of token ids (or
// text) to /v1/completions, or a user message to /v1/chat/completions.
type Request struct {
	API    string // APICompletions ("" too) or APIChat
	Model  string
	Prompt []int // completions: sent as ids, or spelled as text (Client.Spell) to a server that takes no ids
	// Text is the chat API's user message; for completions, when set,
	// the prompt sent instead of Prompt.
	Text string
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

// Form is the form r's prompt goes in: FormChat, FormText or
// FormTokenIDs.
func (r Request) Form() string {
	switch {
	case r.Chat():
		return FormChat
	case r.Text != "":
		return FormText
	}
	return FormTokenIDs
}

// Sent is the prompt's length in tokens as sent: PromptTokens when
// known, else the ids' count.
func (r Request) Sent() int {
	if r.PromptTokens > 0 {
		return r.PromptTokens
	}
	return len(r.Prompt)
}

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
	switch {
	case r.Chat():
		b["messages"] = []map[string]string{{"role": "user", "content": r.Text}}
	case r.Text != "":
		b["prompt"] = r.Text
	default:
		b["prompt"] = idList(r.Prompt)
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

// idList is a prompt's token ids, written as a JSON array without
// reflection: a long prompt is most of its request's body.
type idList []int

// MarshalJSON writes the ids as a JSON array; nil is null, as
// encoding/json writes a nil slice.
func (l idList) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("null"), nil
	}
	b := make([]byte, 1, 7*len(l)+2)
	b[0] = '['
	for i, id := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return append(b, ']'), nil
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
		e.Message = string(b)
	}
	e.Message = ServerText(e.Message)
	return e
}

// post sends r's body in x and returns the response. A server that
// refuses cache_salt with 400 gets the request again without it, and
// one that refuses a prompt of token ids (400, 422) gets it again
// spelled as text (Spell); what the server took is remembered. timer is
// sent just before the POST that produced the response; r is left as
// sent.
func (c *Client) post(x *exchange, r *Request, timer *clock.Request, limit int64) (*http.Response, error) {
	withSalt := r.Salt != "" && c.salt.Load() >= 0
	if err := c.spellIfText(x.ctx, r); err != nil {
		return nil, err
	}
	hdr := map[string]string{}
	if r.Stream {
		hdr["Accept"] = "text/event-stream"
	}
	if r.RequestID != "" {
		hdr["X-Request-Id"] = r.RequestID
	}
	maps.Copy(hdr, r.Header)
	var first error
	for {
		b, err := r.body(withSalt)
		if err != nil {
			return nil, err
		}
		timer.Send()
		resp, err := c.send(x, http.MethodPost, r.path(), b, hdr, false, limit)
		switch {
		case err == nil:
			c.took(r, withSalt)
			return resp, nil
		case formRefused(err) && withSalt && c.salt.Load() == 0:
			// Maybe the server does not take cache_salt (vLLM V0, other
			// engines): retry without; only a success proves it.
			withSalt = false
		case formRefused(err) && r.Form() == FormTokenIDs && c.form.Load() == 0 && len(r.Prompt) > 0:
			// Maybe the server takes no token ids (Ollama, TGI): try text.
			first = err
			text, serr := c.Spell(x.ctx, r.Model, APICompletions, r.Prompt, r.Sent())
			if serr != nil {
				return nil, fmt.Errorf("%w (and as text: %w)", err, serr)
			}
			r.Text = text
		case first != nil:
			return nil, first // text did not help either: the first refusal says why
		default:
			return nil, err
		}
	}
}

// spellIfText spells r's ids as text when the server is known to take
// no token ids.
func (c *Client) spellIfText(ctx context.Context, r *Request) error {
	if r.Form() != FormTokenIDs || c.form.Load() >= 0 || len(r.Prompt) == 0 {
		return nil
	}
	text, err := c.Spell(ctx, r.Model, APICompletions, r.Prompt, r.Sent())
	r.Text = text
	return err
}

// took remembers what the server took: the prompt form and cache_salt.
func (c *Client) took(r *Request, withSalt bool) {
	switch {
	case r.Form() == FormTokenIDs:
		c.form.CompareAndSwap(0, 1)
	case r.Form() == FormText && len(r.Prompt) > 0:
		c.form.Store(-1)
	}
	switch {
	case withSalt:
		c.salt.Store(1)
	case r.Salt != "" && c.salt.Load() == 0:
		c.salt.Store(-1)
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
// a *ServerError for an error event, an *IdleError for a server silent
// too long, or a transport error.
//
// Once the client's breaker tripped (SetMaxTimeouts), it sends nothing
// and returns an error wrapping ErrTimeouts.
func (c *Client) Stream(ctx context.Context, r Request, onChoice func(Chunk)) (Stream, error) {
	if err := c.Tripped(); err != nil {
		return Stream{Form: r.Form(), Sent: r.Sent()}, err
	}
	s, err := c.stream(ctx, r, onChoice)
	c.record(ctx, err)
	return s, err
}

func (c *Client) stream(ctx context.Context, r Request, onChoice func(Chunk)) (Stream, error) {
	r.Stream = true
	x := c.begin(ctx)
	defer x.end()
	var timer clock.Request
	resp, err := c.post(x, &r, &timer, math.MaxInt64)
	if err != nil {
		return Stream{Form: r.Form(), Sent: r.Sent()}, err
	}
	defer resp.Body.Close()
	x.w.await(c.ping) // the first event may come after a long prefill
	s, err := readStream(resp.Body, timer.Since, onChoice, TokenCap(r.MaxTokens))
	s.Form, s.Sent, s.MaxTokens = r.Form(), r.Sent(), r.MaxTokens
	if err != nil && x.ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
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
// Once the client's breaker tripped, it sends nothing and returns an
// error wrapping ErrTimeouts.
func (c *Client) Complete(ctx context.Context, r Request) (Completion, error) {
	if err := c.Tripped(); err != nil {
		return Completion{}, err
	}
	out, err := c.complete(ctx, r)
	c.record(ctx, err)
	return out, err
}

func (c *Client) complete(ctx context.Context, r Request) (Completion, error) {
	r.Stream = false
	x := c.begin(ctx)
	defer x.end()
	var timer clock.Request
	resp, err := c.post(x, &r, &timer, MaxJSONBytes)
	if err != nil {
		return Completion{}, err
	}
	defer resp.Body.Close()
	var out Completion
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Completion{}, fmt.Errorf("reading response: %w", err)
	}
	out.Elapsed = timer.Since()
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

// GetJSON gets path and decodes a JSON body (at most MaxJSONBytes) into
// v, returning the response's headers.
func (c *Client) GetJSON(ctx context.Context, path string, v any) (http.Header, error) {
	x := c.begin(ctx)
	defer x.end()
	resp, err := c.send(x, http.MethodGet, path, nil, nil, true, MaxJSONBytes)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return resp.Header, nil
}

// Version returns what GET /version says ({"version": "0.18.1"}), as
// ServerText keeps it.
func (c *Client) Version(ctx context.Context) (string, error) {
	var v struct {
		Version string `json:"version"`
	}
	if _, err := c.GetJSON(ctx, "/version", &v); err != nil {
		return "", err
	}
	if v.Version = ServerText(v.Version); v.Version == "" {
		return "", errors.New("GET /version: no version in the answer")
	}
	return v.Version, nil
}

// Tokenize counts the tokens of a chat request with one user message as
// the server will see it (vLLM's POST /tokenize with messages and the
// generation prompt).
func (c *Client) Tokenize(ctx context.Context, model, text string) (int, error) {
	x := c.begin(ctx)
	defer x.end()
	b, err := json.Marshal(map[string]any{
		"model": model, "messages": []map[string]string{{"role": "user", "content": text}},
		"add_generation_prompt": true,
	})
	if err != nil {
		return 0, err
	}
	resp, err := c.send(x, http.MethodPost, "/tokenize", b, nil, true, MaxJSONBytes)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Count *int `json:"count"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Count == nil {
		return 0, fmt.Errorf("POST /tokenize: no count in the answer (%v)", err)
	}
	return *out.Count, nil
}
