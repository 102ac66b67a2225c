package gguf

import (
	"fmt"
	"math/rand/v2"
)

// LlamaConfig is the geometry of a LLaMA-architecture model with random
// weights, as Llama builds it.
type LlamaConfig struct {
	Layers      int    // transformer blocks (llama.block_count)
	Embed       int    // hidden size (llama.embedding_length)
	FeedForward int    // SwiGLU inner size (llama.feed_forward_length)
	Heads       int    // query heads; Embed/Heads is the head size
	KVHeads     int    // key/value heads, dividing Heads
	Context     int    // trained context (llama.context_length)
	Seed        uint64 // seed of the random weights
	// Tokenizer is the vocabulary's kind: TokenizerLlama (the default,
	// ""), SentencePiece-style, as llama.cpp reads it; or TokenizerGPT2,
	// byte-level BPE with merges, the only kind Ollama's own engine
	// (OLLAMA_NEW_ENGINE, runner/ollamarunner) reads a LLaMA's
	// vocabulary as: it decodes every piece byte-level, so SentencePiece's
	// "▁" becomes an invalid byte, and the runner drops text that is not
	// valid UTF-8.
	Tokenizer string
}

// Tokenizers Llama writes (tokenizer.ggml.model).
const (
	TokenizerLlama = "llama"
	TokenizerGPT2  = "gpt2"
)

// Token types of tokenizer.ggml.token_type, as llama.cpp numbers them.
const (
	tokenNormal  int32 = 1
	tokenUnknown int32 = 2
	tokenControl int32 = 3
	tokenByte    int32 = 6
)

// Special token ids of the vocabulary Llama writes.
const (
	UnknownID = 0
	BOSID     = 1
	EOSID     = 2
)

// eosWeight is the weight of channel 0 in the output rows of the tokens
// decoding must never produce (EOS, the other specials, the byte tokens).
const eosWeight = -100

// Vocab returns the SentencePiece-style vocabulary Llama writes: <unk>,
// <s>, </s>, the 256 byte-fallback tokens <0x00>..<0xFF>, then ordinary
// pieces ("▁" marks a word start): "▁", letters, digits, punctuation and
// "▁" joined to each lowercase letter; an even number of them. It returns
// each token's score and type.
func Vocab() (tokens []string, scores []float32, types []int32) {
	return vocab(TokenizerLlama)
}

// VocabGPT2 returns the byte-level BPE vocabulary Llama writes for
// TokenizerGPT2: the same pieces, with "Ġ" (GPT-2's byte for a space)
// for "▁" and no byte tokens (a byte-level vocabulary's bytes are its
// pieces), and the merges that join "Ġ" to each lowercase letter.
func VocabGPT2() (tokens []string, scores []float32, types []int32, merges []string) {
	tokens, scores, types = vocab(TokenizerGPT2)
	for c := 'a'; c <= 'z'; c++ {
		merges = append(merges, "Ġ "+string(c))
	}
	return tokens, scores, types, merges
}

// vocab is the vocabulary of tokenizer kind.
func vocab(kind string) (tokens []string, scores []float32, types []int32) {
	add := func(tok string, score float32, typ int32) {
		tokens = append(tokens, tok)
		scores = append(scores, score)
		types = append(types, typ)
	}
	add("<unk>", 0, tokenUnknown)
	add("<s>", 0, tokenControl)
	add("</s>", 0, tokenControl)
	space := "Ġ"
	if kind != TokenizerGPT2 {
		space = "▁"
		for b := range 256 {
			add(fmt.Sprintf("<0x%02X>", b), 0, tokenByte)
		}
	}
	var pieces []string
	pieces = append(pieces, space)
	for c := 'a'; c <= 'z'; c++ {
		pieces = append(pieces, string(c), string(c-'a'+'A'), space+string(c))
	}
	for c := '0'; c <= '9'; c++ {
		pieces = append(pieces, string(c))
	}
	pieces = append(pieces, ".", ",", ":", "-", "'")
	if len(pieces)%2 == 1 {
		pieces = append(pieces, "!")
	}
	for i, p := range pieces {
		// Longer pieces score higher, so "▁a" wins over "▁" then "a".
		add(p, float32(len(p))-float32(i)/1000, tokenNormal)
	}
	return tokens, scores, types
}

// Llama builds a LLaMA-architecture model with random weights and the
// vocabulary of Vocab, for llama.cpp's "llama" loader.
//
// Greedy or sampled decoding never produces end-of-sequence, nor any
// other special or byte token: channel 0 of the residual stream is 1 for
// every token and no layer writes to it (row 0 of every attn_output and
// ffn_down is zero), so after the final RMS norm channel 0 is positive;
// the output rows of those tokens are eosWeight on channel 0 and zero
// elsewhere, so their logits are strongly negative, while the ordinary
// tokens come in pairs whose rows are each other's negation (zero on
// channel 0), so the largest ordinary logit is never below zero.
func Llama(c LlamaConfig) (*File, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	tokens, scores, types, merges := VocabGPT2()
	if c.Tokenizer != TokenizerGPT2 {
		tokens, scores, types = Vocab()
		merges = nil
	}
	r := rand.New(rand.NewPCG(c.Seed, 0x6767756600000000))
	f := &File{KV: c.metadata(tokens, scores, types, merges)}
	add := func(name string, dims []uint64, data []float32) {
		f.Tensors = append(f.Tensors, Tensor{Name: name, Dims: dims, Data: data})
	}
	e, ff, kv := uint64(c.Embed), uint64(c.FeedForward), uint64(c.Embed/c.Heads*c.KVHeads)
	v := uint64(len(tokens))
	add("token_embd.weight", []uint64{e, v}, embeddings(r, c.Embed, len(tokens)))
	for i := range c.Layers {
		blk := fmt.Sprintf("blk.%d.", i)
		add(blk+"attn_norm.weight", []uint64{e}, ones(c.Embed))
		add(blk+"attn_q.weight", []uint64{e, e}, normal(r, int(e*e), 0.05))
		add(blk+"attn_k.weight", []uint64{e, kv}, normal(r, int(e*kv), 0.05))
		add(blk+"attn_v.weight", []uint64{e, kv}, normal(r, int(e*kv), 0.05))
		add(blk+"attn_output.weight", []uint64{e, e}, zeroRow0(normal(r, int(e*e), 0.02), c.Embed))
		add(blk+"ffn_norm.weight", []uint64{e}, ones(c.Embed))
		add(blk+"ffn_gate.weight", []uint64{e, ff}, normal(r, int(e*ff), 0.05))
		add(blk+"ffn_up.weight", []uint64{e, ff}, normal(r, int(e*ff), 0.05))
		add(blk+"ffn_down.weight", []uint64{ff, e}, zeroRow0(normal(r, int(ff*e), 0.02), c.FeedForward))
	}
	add("output_norm.weight", []uint64{e}, ones(c.Embed))
	add("output.weight", []uint64{e, v}, outputRows(r, c.Embed, types))
	return f, nil
}

// check reports a geometry llama.cpp would refuse.
func (c LlamaConfig) check() error {
	switch {
	case c.Layers < 1 || c.Embed < 2 || c.FeedForward < 1 || c.Context < 1:
		return fmt.Errorf("gguf: llama geometry %+v: layers, sizes and context must be positive", c)
	case c.Heads < 1 || c.Embed%c.Heads != 0 || (c.Embed/c.Heads)%2 != 0:
		return fmt.Errorf("gguf: llama geometry: %d heads must divide the hidden size %d into even head sizes", c.Heads, c.Embed)
	case c.KVHeads < 1 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("gguf: llama geometry: %d key/value heads must divide %d heads", c.KVHeads, c.Heads)
	case c.Tokenizer != "" && c.Tokenizer != TokenizerLlama && c.Tokenizer != TokenizerGPT2:
		return fmt.Errorf("gguf: tokenizer %q: want %s or %s", c.Tokenizer, TokenizerLlama, TokenizerGPT2)
	}
	return nil
}

// metadata is the model's GGUF metadata: architecture, geometry and
// tokenizer (with its merges, for a BPE one).
func (c LlamaConfig) metadata(tokens []string, scores []float32, types []int32, merges []string) []KV {
	kind := TokenizerLlama
	if c.Tokenizer == TokenizerGPT2 {
		kind = TokenizerGPT2
	}
	kv := []KV{
		{"general.architecture", "llama"},
		{"general.name", "kvtier-random-llama"},
		{"general.file_type", uint32(0)}, // all F32
		{"llama.context_length", uint32(c.Context)},
		{"llama.embedding_length", uint32(c.Embed)},
		{"llama.block_count", uint32(c.Layers)},
		{"llama.feed_forward_length", uint32(c.FeedForward)},
		{"llama.attention.head_count", uint32(c.Heads)},
		{"llama.attention.head_count_kv", uint32(c.KVHeads)},
		{"llama.rope.dimension_count", uint32(c.Embed / c.Heads)},
		{"llama.rope.freq_base", float32(10000)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"llama.vocab_size", uint32(len(tokens))},
		{"tokenizer.ggml.model", kind},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.unknown_token_id", uint32(UnknownID)},
		{"tokenizer.ggml.bos_token_id", uint32(BOSID)},
		{"tokenizer.ggml.eos_token_id", uint32(EOSID)},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
	}
	if len(merges) > 0 {
		kv = append(kv, KV{"tokenizer.ggml.merges", merges})
	}
	return kv
}

// embeddings is the token embedding matrix: channel 0 is 1 for every
// token, the other channels random.
func embeddings(r *rand.Rand, embed, vocab int) []float32 {
	m := normal(r, embed*vocab, 0.1)
	for t := range vocab {
		m[t*embed] = 1
	}
	return m
}

// outputRows is the output projection: rows of special and byte tokens
// eosWeight on channel 0 and zero elsewhere; ordinary tokens in pairs of
// opposite random rows, zero on channel 0.
func outputRows(r *rand.Rand, embed int, types []int32) []float32 {
	m := make([]float32, embed*len(types))
	var prev []float32
	for t, typ := range types {
		row := m[t*embed : (t+1)*embed]
		switch {
		case typ != tokenNormal:
			row[0] = eosWeight
		case prev == nil:
			for i := 1; i < embed; i++ {
				row[i] = float32(r.NormFloat64())
			}
			prev = row
		default:
			for i := 1; i < embed; i++ {
				row[i] = -prev[i]
			}
			prev = nil
		}
	}
	return m
}

// normal is n values drawn from N(0, std²).
func normal(r *rand.Rand, n int, std float64) []float32 {
	m := make([]float32, n)
	for i := range m {
		m[i] = float32(r.NormFloat64() * std)
	}
	return m
}

// ones is n ones (the RMS norms' weights).
func ones(n int) []float32 {
	m := make([]float32, n)
	for i := range m {
		m[i] = 1
	}
	return m
}

// zeroRow0 zeroes the first row (of rowLen values) of a matrix: the
// projection then never writes channel 0 of the residual stream.
func zeroRow0(m []float32, rowLen int) []float32 {
	clear(m[:rowLen])
	return m
}
