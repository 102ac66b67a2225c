// Package serving is kvtier's client of LLM serving engines that speak
// the OpenAI HTTP API (vLLM, SGLang, llama.cpp's server, Ollama, TGI,
// TensorRT-LLM): generation requests, streamed or not; the server-sent
// events reader and the token counting of a stream; the engine's
// Prometheus /metrics, /version and /tokenize; and the prompts a run
// sends. Every answer is read through a cap and an idle watch, so a
// hostile or hung server can neither grow kvtier without bound nor hang
// it. The suites that measure such servers (probe, interfere, replay,
// knee) import it.
package serving

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kvtier/kvtier/option"
)

// Bounds of what a run may ask of a server.
const (
	// MaxPromptTokens bounds a prompt (a prefix, a chunk): no served
	// model takes more, and the prompt's ids are held in memory.
	MaxPromptTokens = 1 << 24
	// MaxReps bounds the requests per measured point.
	MaxReps = 1_000_000
)

// CheckCounts reports a list of counts (field) that is empty, and each
// value outside lo to hi: "prefix: want 2 to 16777216, got 1 (tokens)".
// unit names what the values count.
func CheckCounts(field string, vs []int, lo, hi int, unit string) []error {
	var errs []error
	if len(vs) == 0 {
		errs = append(errs, option.Errorf(field, "empty"))
	}
	for _, v := range vs {
		errs = append(errs, option.Range(field, v, lo, hi, unit))
	}
	return errs
}

// CheckTimeouts reports a request timeout that is not positive and an
// idle timeout that is negative (Client's Timeout and Idle).
func CheckTimeouts(timeout, idle time.Duration) []error {
	return []error{option.Positive("timeout", timeout), option.NotNegative("idle-timeout", idle)}
}

// CheckAPI reports an API that is neither "" (the default) nor one of APIs.
func CheckAPI(api string) error {
	if api != "" && !slices.Contains(APIs, api) {
		return option.Errorf("api", "%q: want %s", api, strings.Join(APIs, " or "))
	}
	return nil
}

// ErrUnreachable wraps the error of a server that cannot be reached at
// the start; nothing was measured.
var ErrUnreachable = errors.New("endpoint unreachable")

// PurposeHash is the 64-bit FNV-1a hash of a prompt's purpose ("warm",
// "evict-3", ...): the stream that, with a seed, makes its token ids.
func PurposeHash(purpose string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(purpose); i++ {
		h ^= uint64(purpose[i])
		h *= 1099511628211
	}
	return h
}

// TokenIDs returns n token ids drawn from a PCG seeded with (seed,
// stream), each in [100, 30000), valid in every common vocabulary. The
// same arguments give the same ids; a shorter n gives a prefix of them.
func TokenIDs(seed, stream uint64, n int) []int {
	rng := rand.New(rand.NewPCG(seed, stream))
	ids := make([]int, n)
	for i := range ids {
		ids[i] = 100 + rng.IntN(29900)
	}
	return ids
}

// OneLine returns s with every line break and run of blanks made one
// space: a server's message fit for one CSV cell and one console line.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// MaxServerText bounds, in characters, a string a server sent as
// ServerText keeps it.
const MaxServerText = 256

// ServerText makes a string a server sent (its version, a model's name,
// an error message) fit for a row, a manifest and the console: invalid
// UTF-8 made "?", every run of white space one space, every other
// control character (an escape sequence's ESC, a bidirectional
// override) dropped, and the whole cut to MaxServerText characters with
// "..." marking the cut. Every such string passes here, and only here,
// before kvtier keeps it.
func ServerText(s string) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\uFEFF':
			continue
		case r == utf8.RuneError:
			r = '?'
		}
		if n+btoi(space) >= MaxServerText {
			b.WriteString("...")
			break
		}
		if space {
			b.WriteByte(' ')
			n, space = n+1, false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
