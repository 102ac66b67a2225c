package serving

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
)

// The forms a completions prompt is sent in (the prompt_form column).
const (
	FormTokenIDs = "token_ids" // a list of token ids (vLLM, SGLang, llama.cpp, TensorRT-LLM)
	FormText     = "text"      // a string spelled from the ids (Ollama, TGI)
	FormChat     = "chat"      // one user message to /v1/chat/completions
)

// textWords are the words a text prompt is spelled in: one per token id
// (its value modulo 16), so that prompts sharing a prefix of ids share a
// prefix of text. Single letters are one or two tokens in every
// vocabulary; a calibration counts each.
var textWords = strings.Fields("a b c d e f g h i j k l m n o p")

// A Calibration is what a server without a tokenizer endpoint was seen
// to count: the tokens of a prompt spelled from textWords are Base plus
// the sum of each word's Tokens.
type Calibration struct {
	Base   int            // tokens around the words (BOS, a chat template)
	Tokens map[string]int // tokens per word
}

// calibrations holds a client's calibrations per API, each learnt once.
type calibrations struct {
	mu  sync.Mutex
	api map[string]Calibration
}

// formRefused reports whether err is a refusal that may mean the server
// takes no token-id prompt (400, or 422 as TGI answers).
func formRefused(err error) bool {
	var he *HTTPError
	return errors.As(err, &he) && (he.Status == http.StatusBadRequest || he.Status == http.StatusUnprocessableEntity)
}

// PromptForm returns the form the client sends completions prompts in:
// FormTokenIDs until a server refused them (then FormText).
func (c *Client) PromptForm() string {
	if c.form.Load() < 0 {
		return FormText
	}
	return FormTokenIDs
}

// Spell returns a text of about want tokens, as the server counts them,
// spelled from ids (one word per id, so a shared prefix of ids is a
// shared prefix of text), for the completions API or, with api APIChat,
// as a chat message (the template's tokens counted). It calibrates the
// server the first time (a few requests of max_tokens 1).
func (c *Client) Spell(ctx context.Context, model, api string, ids []int, want int) (string, error) {
	cal, err := c.calibrate(ctx, model, api)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	n := cal.Base
	for _, id := range ids {
		if n >= want {
			break
		}
		w := textWords[id%len(textWords)]
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		n += cal.Tokens[w]
	}
	if b.Len() == 0 {
		b.WriteString(textWords[0])
	}
	return b.String(), nil
}

// calReps is how often a word is repeated to count its tokens.
const calReps = 64

// calibrate learns, once per API, how many tokens the server counts for
// each word of textWords and around them: one request per word, of
// calReps copies of it, and one of twice as many copies of the first.
func (c *Client) calibrate(ctx context.Context, model, api string) (Calibration, error) {
	c.cal.mu.Lock()
	defer c.cal.mu.Unlock()
	if cal, ok := c.cal.api[api]; ok {
		return cal, nil
	}
	count := func(w string, reps int) (int, error) {
		text := strings.TrimSpace(strings.Repeat(w+" ", reps))
		out, err := c.Complete(ctx, Request{API: api, Model: model, Text: text, MaxTokens: 1})
		if err != nil {
			return 0, fmt.Errorf("calibrating the prompt length: %w", err)
		}
		if out.Usage == nil || out.Usage.PromptTokens <= 0 {
			return 0, errors.New("calibrating the prompt length: the server reports no usage.prompt_tokens")
		}
		return out.Usage.PromptTokens, nil
	}
	first, err := count(textWords[0], calReps)
	if err != nil {
		return Calibration{}, err
	}
	double, err := count(textWords[0], 2*calReps)
	if err != nil {
		return Calibration{}, err
	}
	per := int(math.Round(float64(double-first) / calReps))
	cal := Calibration{Base: max(first-per*calReps, 0), Tokens: map[string]int{textWords[0]: max(per, 1)}}
	for _, w := range textWords[1:] {
		n, err := count(w, calReps)
		if err != nil {
			return Calibration{}, err
		}
		cal.Tokens[w] = max(int(math.Round(float64(n-cal.Base)/calReps)), 1)
	}
	if c.cal.api == nil {
		c.cal.api = map[string]Calibration{}
	}
	c.cal.api[api] = cal
	return cal, nil
}

// PromptSlack is how far the prompt tokens a server reports may stray
// from those sent before the prompt counts as cut or padded: the chat
// template's overhead plus max(8 tokens, 1 %).
func PromptSlack(sent, overhead int) int {
	return overhead + max(8, sent/100)
}

// CheckPrompt compares the prompt tokens the server reported with the
// tokens sent, allowing PromptSlack: a server that cut the prompt (to
// its context length, say) or padded it is an error saying so.
// reported 0 (no usage) is no error: nothing to compare.
func CheckPrompt(sent, reported, overhead int) error {
	if reported <= 0 || sent <= 0 {
		return nil
	}
	slack := PromptSlack(sent, overhead)
	switch {
	case reported < sent-slack:
		return fmt.Errorf("the server reported %d prompt tokens for a prompt of %d: it cut the prompt (its context length?)", reported, sent)
	case reported > sent+slack:
		return fmt.Errorf("the server reported %d prompt tokens for a prompt of %d: it padded the prompt or counts it otherwise", reported, sent)
	}
	return nil
}

// Warm sends one short request (16 tokens, max_tokens 1) of api to
// model: it loads a model the server loads lazily, so that the first
// measured request does not time that, and learns the prompt form the
// server takes (calibrating it for text when it takes no token ids). It
// returns the form a completions prompt will go in.
func (c *Client) Warm(ctx context.Context, model, api string) (string, error) {
	r := Request{API: api, Model: model, Prompt: TokenIDs(0x6b76, 0x7761726d, 16), MaxTokens: 1}
	if api == APIChat {
		text, err := c.Spell(ctx, model, APIChat, r.Prompt, 16)
		if err != nil {
			return FormChat, fmt.Errorf("warm-up: %w", err)
		}
		r.Text = text
	}
	if _, err := c.Complete(ctx, r); err != nil {
		return r.Form(), fmt.Errorf("warm-up: %w", err)
	}
	if api == APIChat {
		return FormChat, nil
	}
	return c.PromptForm(), nil
}
