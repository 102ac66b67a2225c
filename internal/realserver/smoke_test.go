//go:build servers

package realserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"
)

// words returns a prompt of n tokens for the test model: n-1 letters in
// lowercase words. Its tokenizer makes every letter one token (a space
// joins the letter after it: "▁a"), and adds BOS.
func words(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	letters := 0
	for letters < n-1 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		for range min(2+r.IntN(6), n-1-letters) {
			b.WriteByte(byte('a' + r.IntN(26)))
			letters++
		}
	}
	return b.String()
}

// A stream is what one streamed /v1/completions request gave.
type stream struct {
	ttft   time.Duration // to the first chunk with a choice
	texts  int           // chunks whose choice carried text
	finish string        // the last finish_reason
}

// complete streams one /v1/completions request of prompt, as a plain
// OpenAI client would (text prompt, greedy, max tokens).
func (o *ollama) complete(ctx context.Context, prompt string, maxTokens int) (stream, error) {
	body, _ := json.Marshal(map[string]any{
		"model": modelName, "prompt": prompt, "max_tokens": maxTokens,
		"temperature": 0, "stream": true,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return stream{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return stream{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return stream{}, fmt.Errorf("POST /v1/completions: %s", resp.Status)
	}
	var s stream
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return s, fmt.Errorf("chunk %q: %w", data, err)
		}
		for _, c := range chunk.Choices {
			if s.ttft == 0 {
				s.ttft = time.Since(start)
			}
			if c.Text != "" {
				s.texts++
			}
			if c.FinishReason != nil {
				s.finish = *c.FinishReason
			}
		}
	}
	return s, sc.Err()
}

// promptTokens asks the native API how many tokens the server made of
// prompt (prompt_eval_count of a one-token generation).
func (o *ollama) promptTokens(prompt string) (int, error) {
	body, _ := json.Marshal(map[string]any{
		"model": modelName, "prompt": prompt, "stream": false,
		"options": map[string]any{"num_predict": 1, "temperature": 0},
	})
	b, err := o.post("/api/generate", "application/json", body)
	if err != nil {
		return 0, err
	}
	var r struct {
		PromptEvalCount int `json:"prompt_eval_count"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("/api/generate: %w", err)
	}
	return r.PromptEvalCount, nil
}

// TestOllamaServes checks the server itself, before kvtier meets it: the
// model loads, a prompt of words is one token per letter, decoding never
// ends early (no end-of-sequence: every stream runs to max_tokens, one
// text chunk per token), a miss grows with the prompt, and the prompt
// cache answers a repeated prompt at least 5 times faster.
func TestOllamaServes(t *testing.T) {
	forEngines(t, checkServes)
}

func checkServes(t *testing.T, e engine) {
	o := startOllama(t, e, workDir(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := o.complete(ctx, "warm up", 1); err != nil { // loads the model
		t.Fatalf("warm-up: %v\n%s", err, tail(o.dir+"/ollama.log"))
	}
	if n, err := o.promptTokens(words(3, 1024)); err != nil || n != 1024 {
		t.Errorf("a prompt of words(1024): %d tokens (%v), want 1024", n, err)
	}
	const maxTokens = 16
	run := func(name, prompt string) stream {
		s, err := o.complete(ctx, prompt, maxTokens)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: TTFT %v, %d text chunks, finish %q", name, s.ttft, s.texts, s.finish)
		if s.texts != maxTokens || s.finish != "length" {
			t.Errorf("%s: %d text chunks ending %q, want %d ending \"length\" (the model must never end a sequence)", name, s.texts, s.finish, maxTokens)
		}
		return s
	}
	miss1k := run("1k miss", words(1, 1024))
	long := words(2, 4096)
	miss4k := run("4k miss", long)
	hit4k := run("4k repeated", long)
	if miss4k.ttft <= miss1k.ttft {
		t.Errorf("a 4k miss (%v) is no slower than a 1k miss (%v)", miss4k.ttft, miss1k.ttft)
	}
	if miss4k.ttft < 5*hit4k.ttft {
		t.Errorf("a repeated 4k prompt answered in %v, not 5x faster than its miss (%v)", hit4k.ttft, miss4k.ttft)
	}
}
