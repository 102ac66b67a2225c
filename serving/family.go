package serving

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The server families the client tells apart (docs/servers.md).
const (
	FamilyVLLM     = "vllm"     // GET /version {"version"}, owned_by "vllm"
	FamilySGLang   = "sglang"   // GET /get_model_info {"model_path"}, owned_by "sglang"
	FamilyLlamaCpp = "llamacpp" // GET /props {"default_generation_settings"}, owned_by "llamacpp"
	FamilyOllama   = "ollama"   // GET /api/version {"version"}
	FamilyTGI      = "tgi"      // GET /info {"model_id"}
	FamilyTRTLLM   = "trtllm"   // owned_by "tensorrt_llm" (its GET /version looks like vLLM's)
	FamilyOpenAI   = "openai"   // none of the above: an OpenAI-compatible server
)

// Traits is what one family of servers offers kvtier, as its source
// writes it (docs/servers.md cites the files): the facts the client and
// the suites act on, kept as data so that a family is one entry.
type Traits struct {
	Name  string // FamilyVLLM ...
	Title string // "vLLM"
	// OwnedBy is the owned_by its GET /v1/models entries carry, when it
	// names the family ("" when it names nothing: Ollama's "library",
	// TGI's model id).
	OwnedBy string
	// Probe is the GET that tells the family apart and Field the member
	// of its JSON answer that must be there; "" none.
	Probe, Field string
	// TokenIDs: its completions API takes a prompt of token ids (a
	// server that refuses them gets text, Client.Spell).
	TokenIDs bool
	// Tokenize is its tokenizer endpoint and the shape of its answer;
	// "" none.
	Tokenize string
	// Metrics is where its Prometheus metrics are and their prefix; ""
	// none.
	Metrics, MetricPrefix string
	// Cached is where a response says how many prompt tokens came from
	// its prefix cache; "" nowhere in the OpenAI API.
	Cached string
	// Grain is the tokens its prefix cache reuses at a time, when fixed
	// by the family (1: token by token); 0 when it is a setting kvtier
	// reads (vLLM's block size) or cannot learn.
	Grain int
	// Pool is the launch option that sizes a KV pool shared by requests
	// (the knee sweeps it); NoPool says why there is none when Pool is "".
	Pool, NoPool string
	// NoOffload says why the family has no CPU store that prefixes
	// evicted from its KV go to (the probe's cpu tier); "" when it may
	// have one.
	NoOffload string
	// CacheLog is the setting that makes its log count each request's
	// cached prompt tokens (ServerLog); "" none.
	CacheLog string
	// SlotsAt is the GET that says how many sequences the server runs
	// at once and SlotsField its member (Client.Slots); "" none. Parallel
	// is the launch setting that sets it, for a message.
	SlotsAt, SlotsField, Parallel string
}

// families lists the families, those told apart by a request first in
// the order they are asked.
var families = []Traits{
	{Name: FamilyOllama, Title: "Ollama", Probe: "/api/version", Field: "version",
		Cached: "none; the native /api/generate's prompt_eval_count is the whole prompt, hit or not", Grain: 1,
		CacheLog:  "OLLAMA_DEBUG=1",
		NoOffload: "Ollama keeps a request's KV in its parallel slot's context only; it offloads none to CPU memory",
		Parallel:  "OLLAMA_NUM_PARALLEL (default 2 on a CPU)",
		NoPool:    "Ollama's context length (num_ctx) limits one request; its KV is not a pool shared by requests that a launch option sizes"},
	{Name: FamilyTRTLLM, Title: "TensorRT-LLM trtllm-serve", OwnedBy: "tensorrt_llm", TokenIDs: true,
		Metrics: "/prometheus/metrics", Cached: CachedFromUsage, Pool: "--kv_cache_free_gpu_memory_fraction"},
	{Name: FamilyVLLM, Title: "vLLM", OwnedBy: "vllm", Probe: "/version", Field: "version", TokenIDs: true,
		Tokenize: "POST /tokenize {count, tokens}", Metrics: "/metrics", MetricPrefix: "vllm:",
		Cached: CachedFromUsage + " (--enable-prompt-tokens-details)", Pool: "--num-gpu-blocks-override", Parallel: "--max-num-seqs"},
	{Name: FamilySGLang, Title: "SGLang", OwnedBy: "sglang", Probe: "/get_model_info", Field: "model_path", TokenIDs: true,
		Tokenize: "POST /tokenize {tokens, count}", Metrics: "/metrics", MetricPrefix: "sglang:",
		Cached: CachedFromUsage + " (--enable-cache-report; absent when 0)", Grain: 1, Pool: "--max-total-tokens",
		SlotsAt: "/get_server_info", SlotsField: "max_running_requests", Parallel: "--max-running-requests"},
	{Name: FamilyLlamaCpp, Title: "llama.cpp server", OwnedBy: "llamacpp", Probe: "/props", Field: "default_generation_settings", TokenIDs: true,
		Tokenize: "POST /tokenize {tokens}", Metrics: "/metrics", MetricPrefix: "llamacpp:",
		Cached: CachedFromTimings, Grain: 1, Pool: "--ctx-size over --parallel slots",
		SlotsAt: "/props", SlotsField: "total_slots", Parallel: "--parallel",
		NoOffload: "the llama.cpp server keeps a request's KV in its slot's context only; it offloads none to CPU memory"},
	{Name: FamilyTGI, Title: "TGI", Probe: "/info", Field: "model_id",
		Tokenize: "POST /tokenize [{id, text, start, stop}]", Metrics: "/metrics", MetricPrefix: "tgi_",
		Pool: "--max-batch-total-tokens", Parallel: "--max-concurrent-requests"},
	{Name: FamilyOpenAI, Title: "an OpenAI-compatible server", TokenIDs: true, Metrics: "/metrics"},
}

// TraitsOf returns the traits of family name; an unknown name gets
// those of FamilyOpenAI.
func TraitsOf(name string) Traits {
	for _, t := range families {
		if t.Name == name {
			return t
		}
	}
	return TraitsOf(FamilyOpenAI)
}

// Families lists the names of the families, FamilyOpenAI last.
func Families() []string {
	var names []string
	for _, t := range families {
		names = append(names, t.Name)
	}
	return names
}

// A Family is what the client recognised the server as.
type Family struct {
	Name    string // FamilyVLLM ... FamilyOpenAI
	Version string // as the server says it; "" unknown
	By      string // the request that told, e.g. "GET /api/version"
}

// Traits returns what f's family offers.
func (f Family) Traits() Traits { return TraitsOf(f.Name) }

// VLLMLike reports whether f may be vLLM: it is, or no family answered
// (a vLLM behind a proxy that hides /version looks so).
func (f Family) VLLMLike() bool {
	return f.Name == FamilyVLLM || f.Name == FamilyOpenAI || f.Name == ""
}

// KVPool reports whether the family has a KV pool shared by requests
// whose size a launch option sets (vLLM's --num-gpu-blocks-override,
// SGLang's --max-total-tokens, llama.cpp's --ctx-size over its slots,
// TGI's --max-batch-total-tokens), and why not when it has none.
func (f Family) KVPool() (bool, string) {
	t := f.Traits()
	return t.NoPool == "", t.NoPool
}

// DetectFamily tells which family the server is: by the owned_by of its
// GET /v1/models entries where that names one, else by the requests in
// families' order (each bounded by 5 s), the first that answers with its
// field. None answering is FamilyOpenAI. The answer is remembered: a
// second call asks nothing.
func (c *Client) DetectFamily(ctx context.Context) Family {
	if f := c.fam.Load(); f != nil {
		return *f
	}
	f := c.detectFamily(ctx)
	c.fam.Store(&f)
	return f
}

func (c *Client) detectFamily(ctx context.Context) Family {
	q := c.With(5*time.Second, 0)
	var models struct {
		Data []struct {
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	if _, err := q.GetJSON(ctx, "/v1/models", &models); err == nil && len(models.Data) > 0 {
		for _, t := range families {
			if t.OwnedBy != "" && models.Data[0].OwnedBy == t.OwnedBy {
				return Family{Name: t.Name, Version: q.familyVersion(ctx, t), By: fmt.Sprintf("GET /v1/models owned_by %q", t.OwnedBy)}
			}
		}
	}
	for _, t := range families {
		if t.Probe == "" {
			continue
		}
		var body map[string]json.RawMessage
		if _, err := q.GetJSON(ctx, t.Probe, &body); err != nil || body[t.Field] == nil {
			continue
		}
		f := Family{Name: t.Name, By: "GET " + t.Probe}
		var v string
		if json.Unmarshal(body["version"], &v) == nil {
			f.Version = clip(ServerText(v), 64)
		}
		return f
	}
	return Family{Name: FamilyOpenAI, By: "no family endpoint answered"}
}

// familyVersion asks a family told by owned_by for its version: GET
// /version where it has one (vLLM, TensorRT-LLM).
func (c *Client) familyVersion(ctx context.Context, t Traits) string {
	if t.Name != FamilyVLLM && t.Name != FamilyTRTLLM {
		return ""
	}
	var v struct {
		Version string `json:"version"`
	}
	if _, err := c.GetJSON(ctx, "/version", &v); err != nil {
		return ""
	}
	return clip(ServerText(v.Version), 64)
}

// readySignals are the requests asked, in order, when GET /health is
// not there (404): the first that answers 200 says the server is ready.
var readySignals = []string{"/v1/models", "/api/version", "/health_generate"}

// Ready asks whether the server is ready: GET /health answering 200
// (vLLM, SGLang, llama.cpp, TGI, TensorRT-LLM); when the server has no
// /health (404: Ollama) the first of GET /v1/models, /api/version and
// /health_generate answering 200. It returns the signal that answered,
// or an error saying what the last one said.
func (c *Client) Ready(ctx context.Context) (string, error) {
	code, err := c.status(ctx, "/health")
	switch {
	case err != nil:
		return "", fmt.Errorf("GET /health: %w", err)
	case code == http.StatusOK:
		return "GET /health", nil
	case code != http.StatusNotFound:
		return "", fmt.Errorf("GET /health: HTTP %d", code)
	}
	last := errors.New("GET /health: HTTP 404")
	for _, p := range readySignals {
		code, err := c.status(ctx, p)
		if err == nil && code == http.StatusOK {
			return "GET " + p, nil
		}
		if err == nil {
			err = fmt.Errorf("HTTP %d", code)
		}
		last = fmt.Errorf("%w; GET %s: %w", last, p, err)
	}
	return "", last
}

// status sends GET path and returns the answer's status, its body
// drained through the client's cap.
func (c *Client) status(ctx context.Context, path string) (int, error) {
	x := c.begin(ctx)
	defer x.end()
	resp, err := c.send(x, http.MethodGet, path, nil, nil, true, MaxJSONBytes)
	if err == nil {
		resp.Body.Close()
	}
	var he *HTTPError
	switch {
	case errors.As(err, &he):
		return he.Status, nil
	case err != nil:
		return 0, err
	}
	return http.StatusOK, nil
}

// String says which family a server is, for a manifest or a log.
func (f Family) String() string {
	s := f.Name
	if f.Version != "" {
		s += " " + f.Version
	}
	return strings.TrimSpace(s + " (" + f.By + ")")
}

// NoPoolSize says, in f's words, why the size of its KV pool is unknown:
// vLLM's metric missing, a family without a pool (Ollama), or one that
// does not report it.
func (f Family) NoPoolSize() string {
	t := f.Traits()
	switch {
	case f.VLLMLike():
		return "no num_gpu_blocks in vllm:cache_config_info"
	case t.NoPool != "":
		return t.NoPool
	}
	return t.Title + " reports no size of its KV pool: give --gpu-blocks"
}

// NoCounters says, in f's words, why the server's prefix-cache counters
// are missing; err is why /metrics could not be read (nil: read, without
// the counters).
func (f Family) NoCounters(err error) string {
	t := f.Traits()
	switch {
	case t.Metrics == "":
		return t.Title + " has no /metrics: no prefix-cache counters"
	case err != nil:
		return "no /metrics: " + err.Error()
	case f.VLLMLike():
		return "the server exposes no vllm:prefix_cache_hits/queries"
	}
	return t.Title + "'s /metrics has no prefix-cache hit counters"
}

// NoCachedTokens says, in f's words, why no response counted its cached
// prompt tokens, and what would.
func (f Family) NoCachedTokens() string {
	t := f.Traits()
	switch {
	case f.VLLMLike():
		return "the server sent no usage cached_tokens (vLLM: --enable-prompt-tokens-details)"
	case t.CacheLog != "":
		return t.Title + " reports no cached tokens; its log counts them: start it with " + t.CacheLog + " and give --server-log"
	}
	return t.Title + " sent no cached tokens (" + t.Cached + ")"
}
