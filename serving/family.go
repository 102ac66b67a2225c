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
	FamilyVLLM     = "vllm"     // GET /version {"version"}, vllm:* metrics
	FamilySGLang   = "sglang"   // GET /get_model_info {"model_path"}
	FamilyLlamaCpp = "llamacpp" // GET /props {"default_generation_settings"}
	FamilyOllama   = "ollama"   // GET /api/version {"version"}
	FamilyTGI      = "tgi"      // GET /info {"model_id", "router"}
	FamilyOpenAI   = "openai"   // none of the above: an OpenAI-compatible server
)

// A Family is what the client recognised the server as.
type Family struct {
	Name    string // FamilyVLLM ... FamilyOpenAI
	Version string // as the server says it; "" unknown
	By      string // the request that told, e.g. "GET /api/version"
}

// KVPool reports whether the family has a KV pool shared by requests
// whose size a launch option sets (vLLM's --num-gpu-blocks-override,
// SGLang's --max-total-tokens, llama.cpp's --ctx-size over its slots,
// TGI's --max-batch-total-tokens), and why not when it has none.
func (f Family) KVPool() (bool, string) {
	if f.Name == FamilyOllama {
		return false, "Ollama's context length (num_ctx) limits one request; its KV is not a pool shared by requests that a launch option sizes"
	}
	return true, ""
}

// familyProbes are the requests that tell the families apart, in order,
// and the field of the JSON answer each needs.
var familyProbes = []struct{ name, path, field string }{
	{FamilyOllama, "/api/version", "version"},
	{FamilyVLLM, "/version", "version"},
	{FamilySGLang, "/get_model_info", "model_path"},
	{FamilyLlamaCpp, "/props", "default_generation_settings"},
	{FamilyTGI, "/info", "model_id"},
}

// DetectFamily asks the server the requests that tell the families
// apart (each bounded by 5 s) and returns the first that answers.
func (c *Client) DetectFamily(ctx context.Context) Family {
	q := c.With(5*time.Second, 0)
	for _, p := range familyProbes {
		var body map[string]json.RawMessage
		if _, err := q.GetJSON(ctx, p.path, &body); err != nil || body[p.field] == nil {
			continue
		}
		f := Family{Name: p.name, By: "GET " + p.path}
		var v string
		if json.Unmarshal(body["version"], &v) == nil {
			f.Version = v
		}
		return f
	}
	return Family{Name: FamilyOpenAI, By: "no family endpoint answered"}
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
