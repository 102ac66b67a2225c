package vllmsim

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// words are the first token ids of the toy tokenizer and the text of the
// tokens the simulator generates.
var words = strings.Fields(`the of and to a in is that for it as with was on be by
at this from or an are not have but had they which you were all their one
has more when will would there can if so what about up out them some into
time than other its only new could these two may first then do any like
my now over such our man me even most made after also did many`)

var wordID = func() map[string]int {
	m := make(map[string]int, len(words))
	for i, w := range words {
		m[w] = i
	}
	return m
}()

// A tokenizer is the simulator's deterministic stand-in for a model's
// tokenizer: every whitespace-separated word is one token. Words of the
// built-in list have small ids; any other word hashes (FNV-1a) to an id
// in the rest of the vocabulary below the special tokens. So a prompt of
// L words is L tokens, and the same text is the same tokens in every
// process.
type tokenizer struct {
	vocab int
}

// Special tokens at the top of the vocabulary, for chat templates.
func (t tokenizer) imStart() int { return t.vocab - 1 }
func (t tokenizer) imEnd() int   { return t.vocab - 2 }

// roleID is the token of a chat role (below the special tokens).
func (t tokenizer) roleID(role string) int { return t.wordToken(role) }

func (t tokenizer) wordToken(w string) int {
	if id, ok := wordID[w]; ok {
		return id
	}
	h := fnv.New32a()
	h.Write([]byte(w))
	span := t.vocab - len(words) - 2
	return len(words) + int(h.Sum32()%uint32(span))
}

// encode returns the tokens of text.
func (t tokenizer) encode(text string) []int {
	f := strings.Fields(text)
	ids := make([]int, len(f))
	for i, w := range f {
		ids[i] = t.wordToken(w)
	}
	return ids
}

// decode returns the text of one generated token, with its leading space.
func (t tokenizer) decode(id int) string {
	if id >= 0 && id < len(words) {
		return " " + words[id]
	}
	return fmt.Sprintf(" t%d", id)
}

// A chatMessage is one message of a chat request; content is a string or
// a list of parts of which the text parts count.
type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// chat applies a ChatML-like template: per message <|im_start|> role
// content <|im_end|>, then, with generation, <|im_start|> assistant.
func (t tokenizer) chat(msgs []chatMessage, generation bool) ([]int, error) {
	var ids []int
	for i, m := range msgs {
		text, err := messageText(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		if m.Role == "" {
			return nil, fmt.Errorf("messages[%d].role: field required", i)
		}
		ids = append(ids, t.imStart(), t.roleID(m.Role))
		ids = append(ids, t.encode(text)...)
		ids = append(ids, t.imEnd())
	}
	if generation {
		ids = append(ids, t.imStart(), t.roleID("assistant"))
	}
	return ids, nil
}

func messageText(c any) (string, error) {
	switch v := c.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []any:
		var b strings.Builder
		for _, p := range v {
			part, ok := p.(map[string]any)
			if !ok {
				return "", fmt.Errorf("content part is not an object")
			}
			if s, ok := part["text"].(string); ok && part["type"] == "text" {
				b.WriteString(s)
				b.WriteByte(' ')
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("must be a string or a list of parts")
}
