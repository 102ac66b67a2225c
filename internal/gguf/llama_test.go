package gguf

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

var tiny = LlamaConfig{Layers: 2, Embed: 32, FeedForward: 64, Heads: 4, KVHeads: 2, Context: 8192, Seed: 1}

// writeLlama builds the model of c, writes it and reads it back.
func writeLlama(t *testing.T, c LlamaConfig) decoded {
	t.Helper()
	f, err := Llama(c)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return readGGUF(t, buf.Bytes())
}

func TestLlamaLayout(t *testing.T) {
	t.Parallel()
	got := writeLlama(t, tiny)
	for _, k := range []string{
		"general.architecture", "llama.context_length", "llama.embedding_length", "llama.block_count",
		"llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
		"llama.rope.dimension_count", "llama.attention.layer_norm_rms_epsilon", "tokenizer.ggml.model",
		"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
		"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
	} {
		if _, ok := got.kv[k]; !ok {
			t.Errorf("metadata %s missing", k)
		}
	}
	if got.kv["general.architecture"] != "llama" || got.kv["tokenizer.ggml.model"] != "llama" {
		t.Errorf("architecture %v, tokenizer %v: want llama, llama", got.kv["general.architecture"], got.kv["tokenizer.ggml.model"])
	}
	tokens, _, _ := Vocab()
	v, e, kv := uint64(len(tokens)), uint64(tiny.Embed), uint64(tiny.Embed/tiny.Heads*tiny.KVHeads)
	want := map[string][]uint64{
		"token_embd.weight": {e, v}, "output_norm.weight": {e}, "output.weight": {e, v},
		"blk.1.attn_q.weight": {e, e}, "blk.1.attn_k.weight": {e, kv}, "blk.1.attn_v.weight": {e, kv},
		"blk.1.attn_output.weight": {e, e}, "blk.1.ffn_gate.weight": {e, 64}, "blk.1.ffn_up.weight": {e, 64},
		"blk.1.ffn_down.weight": {64, e}, "blk.1.attn_norm.weight": {e}, "blk.1.ffn_norm.weight": {e},
	}
	for name, dims := range want {
		if g, ok := got.tensors[name]; !ok || fmt.Sprint(g.Dims) != fmt.Sprint(dims) {
			t.Errorf("tensor %s: dims %v (present %v), want %v", name, g.Dims, ok, dims)
		}
	}
	if n := len(got.tensors); n != 3+9*tiny.Layers {
		t.Errorf("%d tensors, want %d", n, 3+9*tiny.Layers)
	}
}

func TestVocab(t *testing.T) {
	t.Parallel()
	tokens, scores, types := Vocab()
	if len(tokens) != len(scores) || len(tokens) != len(types) {
		t.Fatalf("%d tokens, %d scores, %d types", len(tokens), len(scores), len(types))
	}
	if tokens[UnknownID] != "<unk>" || tokens[BOSID] != "<s>" || tokens[EOSID] != "</s>" || tokens[3+10] != "<0x0A>" {
		t.Errorf("specials %q %q %q, newline %q", tokens[0], tokens[1], tokens[2], tokens[13])
	}
	seen := map[string]bool{}
	normal := 0
	for i, tok := range tokens {
		if seen[tok] {
			t.Errorf("token %q twice", tok)
		}
		seen[tok] = true
		if types[i] == tokenNormal {
			normal++
		}
	}
	if normal%2 != 0 {
		t.Errorf("%d ordinary tokens, want an even number (they pair up)", normal)
	}
}

// TestLlamaNeverEndsSequence checks the two facts the "no EOS" design
// rests on: no layer writes channel 0 of the residual stream, and any
// final hidden state whose channel 0 is 1 gives EOS (and every other
// special or byte token) a logit far below the best ordinary token's.
func TestLlamaNeverEndsSequence(t *testing.T) {
	t.Parallel()
	f, err := Llama(tiny)
	if err != nil {
		t.Fatal(err)
	}
	ts := map[string]Tensor{}
	for _, x := range f.Tensors {
		ts[x.Name] = x
	}
	for i := range tiny.Layers {
		for _, name := range []string{"attn_output", "ffn_down"} {
			w := ts[fmt.Sprintf("blk.%d.%s.weight", i, name)]
			for j, x := range w.Data[:w.Dims[0]] {
				if x != 0 {
					t.Fatalf("blk.%d.%s row 0 [%d] = %g: the layer writes channel 0", i, name, j, x)
				}
			}
		}
	}
	emb := ts["token_embd.weight"]
	for tok := range emb.Dims[1] {
		if x := emb.Data[tok*emb.Dims[0]]; x != 1 {
			t.Fatalf("token %d: embedding channel 0 = %g, want 1", tok, x)
		}
	}
	_, _, types := Vocab()
	out := ts["output.weight"].Data
	r := rand.New(rand.NewPCG(2, 3))
	for trial := range 200 {
		h := make([]float64, tiny.Embed)
		h[0] = 1
		scale := math.Pow(10, float64(trial%4)) // rest of the state up to 1000 times channel 0
		for i := 1; i < len(h); i++ {
			h[i] = r.NormFloat64() * scale
		}
		rmsNorm(h)
		best, bestNormal := math.Inf(-1), math.Inf(-1)
		for tok, typ := range types {
			l := dot(out[tok*tiny.Embed:(tok+1)*tiny.Embed], h)
			best = max(best, l)
			if typ == tokenNormal {
				bestNormal = max(bestNormal, l)
			} else if l >= 0 {
				t.Fatalf("trial %d: token %d (type %d) logit %g, want negative", trial, tok, typ, l)
			}
		}
		if best != bestNormal || bestNormal < 0 {
			t.Fatalf("trial %d: best logit %g, best ordinary %g", trial, best, bestNormal)
		}
	}
}

func rmsNorm(h []float64) {
	var ss float64
	for _, x := range h {
		ss += x * x
	}
	s := 1 / math.Sqrt(ss/float64(len(h))+1e-5)
	for i := range h {
		h[i] *= s
	}
}

func dot(w []float32, h []float64) float64 {
	var s float64
	for i, x := range w {
		s += float64(x) * h[i]
	}
	return s
}

func TestLlamaRefusesGeometry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*LlamaConfig)
		want string
	}{
		{"heads", func(c *LlamaConfig) { c.Heads = 5 }, "5 heads must divide"},
		{"kv heads", func(c *LlamaConfig) { c.KVHeads = 3 }, "3 key/value heads"},
		{"layers", func(c *LlamaConfig) { c.Layers = 0 }, "must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tiny
			tc.edit(&c)
			if _, err := Llama(c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// byteLevel decodes a piece as a byte-level BPE decoder does (GPT-2's
// byte-to-rune map, as Ollama's own engine applies it to every LLaMA
// piece): a rune stands for one byte, U+0100..U+0120 for the bytes to
// 0x20 and the rest for itself, cut to a byte.
func byteLevel(piece string) string {
	var b []byte
	for _, r := range piece {
		if r >= 0x100 && r <= 0x120 {
			r -= 0x100
		}
		b = append(b, byte(r))
	}
	return string(b)
}

// Every ordinary piece of the GPT-2 vocabulary decodes, byte-level, to
// valid non-empty text ("Ġa" to " a"), and the merges make "Ġ" and a
// letter one token; the SentencePiece vocabulary's word-start pieces do
// not ("▁a" is an invalid byte and "a", which the runner drops whole),
// which is why Ollama's own engine streamed mostly empty text.
func TestVocabGPT2DecodesByteLevel(t *testing.T) {
	t.Parallel()
	tokens, _, types, merges := VocabGPT2()
	if len(merges) != 26 || merges[0] != "Ġ a" {
		t.Errorf("merges %q", merges)
	}
	have := map[string]bool{}
	for i, tok := range tokens {
		have[tok] = true
		if types[i] == tokenByte {
			t.Errorf("byte token %q in a byte-level vocabulary", tok)
		}
		if text := byteLevel(tok); types[i] == tokenNormal && (text == "" || !utf8.ValidString(text)) {
			t.Errorf("piece %q decodes to %q", tok, text)
		}
	}
	for _, m := range merges {
		if l, r, _ := strings.Cut(m, " "); !have[l] || !have[r] || !have[l+r] {
			t.Errorf("merge %q: its parts or result are not in the vocabulary", m)
		}
	}
	sp, _, _ := Vocab()
	bad := 0
	for _, tok := range sp {
		if strings.HasPrefix(tok, "▁") && !utf8.ValidString(byteLevel(tok)) {
			bad++
		}
	}
	if bad != 27 {
		t.Errorf("%d SentencePiece word-start pieces decode to invalid bytes, want all 27", bad)
	}
	got := writeLlama(t, LlamaConfig{Layers: 1, Embed: 4, FeedForward: 4, Heads: 2, KVHeads: 1, Context: 64, Tokenizer: TokenizerGPT2})
	if got.kv["tokenizer.ggml.model"] != TokenizerGPT2 || got.kv["tokenizer.ggml.merges"] == nil {
		t.Errorf("tokenizer %v, merges %v", got.kv["tokenizer.ggml.model"], got.kv["tokenizer.ggml.merges"])
	}
}
